package dev.fencing.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * The raw side of {@link KafkaPostgresBenchmark}: the exactly-once loop a PostgreSQL user writes by hand
 * without fencing. Per poll, one transaction applies the records' effect ({@link BalanceTable.Batch}) and
 * upserts the next offset of each partition into {@code bench_offset}; on assignment the loop seeks each
 * partition to the offset stored there. Kafka's own committed offsets are not used. Each poll is one unit,
 * like the fenced consumer's default.
 */
final class HandWrittenExactlyOnceLoop {
    private static final String LOAD_OFFSET =
            "SELECT next_offset FROM bench_offset WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String SAVE_OFFSET =
            "INSERT INTO bench_offset (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?)"
                    + " ON CONFLICT (consumer_group, topic, kafka_partition) DO UPDATE"
                    + " SET next_offset = EXCLUDED.next_offset";

    private HandWrittenExactlyOnceLoop() {}

    /** A unit's database effect: collected record by record, sent inside the unit's transaction. */
    interface Effect {
        void add(String account, int amount);

        void flush(Connection connection) throws SQLException;
    }

    static void createOffsetTable(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE bench_offset (consumer_group TEXT NOT NULL, topic TEXT NOT NULL,"
                    + " kafka_partition INTEGER NOT NULL, next_offset BIGINT NOT NULL,"
                    + " PRIMARY KEY (consumer_group, topic, kafka_partition))");
        }
    }

    /**
     * Runs until {@code running} is false; {@code polled} runs when a poll returned records, before they are
     * handled, and {@code handled} hears each committed poll's record count. The consumer must be new and
     * unsubscribed; the connection is the loop's own.
     */
    static void run(
            KafkaConsumer<String, String> consumer,
            String groupId,
            String topic,
            Connection connection,
            AtomicBoolean running,
            Runnable polled,
            LongConsumer handled)
            throws SQLException {
        run(consumer, groupId, topic, connection, running, polled, handled, BalanceTable.Batch::new);
    }

    /** {@link #run} with another effect than the balance table's. */
    static void run(
            KafkaConsumer<String, String> consumer,
            String groupId,
            String topic,
            Connection connection,
            AtomicBoolean running,
            Runnable polled,
            LongConsumer handled,
            Supplier<? extends Effect> effects)
            throws SQLException {
        connection.setAutoCommit(false);
        consumer.subscribe(List.of(topic), new SeekToStored(consumer, groupId, connection));
        Map<TopicPartition, Long> next = new HashMap<>();
        while (running.get()) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (records.isEmpty()) {
                continue;
            }
            polled.run();
            Effect effect = effects.get();
            next.clear();
            for (ConsumerRecord<String, String> record : records) {
                effect.add(record.key(), record.value().length());
                next.put(new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
            }
            try {
                effect.flush(connection);
                try (PreparedStatement statement = connection.prepareStatement(SAVE_OFFSET)) {
                    for (Map.Entry<TopicPartition, Long> e : next.entrySet()) {
                        statement.setString(1, groupId);
                        statement.setString(2, e.getKey().topic());
                        statement.setInt(3, e.getKey().partition());
                        statement.setLong(4, e.getValue());
                        statement.addBatch();
                    }
                    statement.executeBatch();
                }
                connection.commit();
            } catch (SQLException | RuntimeException e) {
                connection.rollback();
                throw e;
            }
            handled.accept(records.count());
        }
    }

    /** Seeks each assigned partition to the offset stored in PostgreSQL, if any. */
    private record SeekToStored(KafkaConsumer<String, String> consumer, String groupId, Connection connection)
            implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
                for (TopicPartition partition : partitions) {
                    statement.setString(1, groupId);
                    statement.setString(2, partition.topic());
                    statement.setInt(3, partition.partition());
                    try (ResultSet rows = statement.executeQuery()) {
                        if (rows.next()) {
                            consumer.seek(partition, rows.getLong(1));
                        }
                    }
                }
                connection.commit();
            } catch (SQLException e) {
                throw new IllegalStateException("could not load offsets of " + partitions, e);
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // every poll's offsets were committed with its effects: nothing to save
        }
    }
}
