package dev.fencing.verify;

import dev.fencing.kafka.DeadLetterHeaders;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Copies the dead-letter topic into {@code <schema>.dead_letters}, one row per refused record (its origin
 * partition and offset are the key, so a dead letter written twice is one row; a dead letter without its origin
 * headers is recorded at partition -1 offset -1, and every such letter is a row of its own). A copy is idempotent:
 * each row also holds the letter's own partition and offset in the dead-letter topic, its primary key, so copying the
 * topic again adds no row, not even for a letter without its origin. For the checker, which reads
 * the database and not Kafka. Part of the observation, not of the system under test: it reads from the
 * beginning with no group and runs until {@link #drainAndStop} has copied everything up to the topic's end.
 * Thread-safe.
 */
final class DeadLetterRecorder {
    private final String bootstrap;
    private final String topic;
    private final DataSource database;
    private final String insertSql;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final AtomicReference<RuntimeException> failure = new AtomicReference<>();
    private Thread thread;

    DeadLetterRecorder(String bootstrap, String topic, DataSource database, String schema) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.database = database;
        this.insertSql = "INSERT INTO " + schema + ".dead_letters (origin_partition, origin_offset, record_key, op,"
                + " reason, detail, letter_partition, letter_offset) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                + " ON CONFLICT DO NOTHING";
    }

    void start() {
        thread = new Thread(this::copy, "dead-letter-recorder");
        thread.setDaemon(true);
        thread.start();
    }

    /** Copies every dead letter written so far, then stops. */
    void drainAndStop(Duration timeout) throws InterruptedException {
        stop.countDown();
        thread.join(timeout.toMillis());
        if (thread.isAlive()) {
            throw new VerifyException(
                    "the dead-letter topic " + topic + " was not copied within " + timeout.toSeconds() + " s");
        }
        if (failure.get() != null) {
            throw failure.get();
        }
    }

    private void copy() {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                false,
                ConsumerConfig.CLIENT_ID_CONFIG,
                "verify-dead-letter-recorder");
        try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
                Connection connection = database.getConnection();
                PreparedStatement insert = connection.prepareStatement(insertSql)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(info -> new TopicPartition(topic, info.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = null;
            while (true) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> record : records) {
                    insert(insert, record);
                }
                if (stop.getCount() == 0) {
                    if (end == null) {
                        end = consumer.endOffsets(partitions);
                    }
                    boolean caughtUp = true;
                    for (TopicPartition partition : partitions) {
                        caughtUp &= consumer.position(partition) >= end.get(partition);
                    }
                    if (caughtUp) {
                        return;
                    }
                }
            }
        } catch (SQLException e) {
            failure.set(new VerifyException("cannot record dead letters: " + e.getMessage(), e));
        } catch (RuntimeException e) {
            failure.set(e);
        }
    }

    private static void insert(PreparedStatement insert, ConsumerRecord<String, String> record) throws SQLException {
        insert.setInt(1, Math.toIntExact(origin(record, DeadLetterHeaders.ORIGIN_PARTITION, Integer.MAX_VALUE)));
        insert.setLong(2, origin(record, DeadLetterHeaders.ORIGIN_OFFSET, Long.MAX_VALUE));
        insert.setString(3, record.key());
        Long op = op(record.value());
        if (op == null) {
            insert.setNull(4, Types.BIGINT);
        } else {
            insert.setLong(4, op);
        }
        insert.setString(5, header(record, DeadLetterHeaders.REASON, "UNKNOWN"));
        insert.setString(6, header(record, DeadLetterHeaders.DETAIL, null));
        insert.setInt(7, record.partition());
        insert.setLong(8, record.offset());
        insert.executeUpdate();
    }

    /**
     * The operation whose id a record's value is, as the writers send it ({@code Long.toString} of the id), else
     * null: read leniently, {@code "+101"} or {@code "0101"} would be op 101's dead letter.
     */
    static Long op(String value) {
        try {
            Long op = value == null ? null : Long.parseLong(value);
            return op != null && op.toString().equals(value) ? op : null;
        } catch (NumberFormatException e) {
            // not one of the workload's values: the checker reports a dead letter without an operation
            return null;
        }
    }

    /**
     * An origin header's number, -1 if the header is absent.
     *
     * @throws VerifyException naming the header, its text and the dead letter's own partition and offset, if it is
     *     not a number from 0 to {@code max}: the consumer under test wrote it, and a run whose dead letters cannot
     *     be placed cannot be checked
     */
    private static long origin(ConsumerRecord<String, String> record, String name, long max) {
        String text = header(record, name, null);
        if (text == null) {
            return -1;
        }
        long value;
        try {
            value = Long.parseLong(text);
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < 0 || value > max || !Long.toString(value).equals(text)) {
            throw new VerifyException("the dead letter at " + record.topic() + "-" + record.partition() + " offset "
                    + record.offset() + " (key " + record.key() + ") has header " + name + " '" + text
                    + "', not a number from 0 to " + max);
        }
        return value;
    }

    private static String header(ConsumerRecord<String, String> record, String name, String absent) {
        Header header = record.headers().lastHeader(name);
        return header == null ? absent : new String(header.value(), StandardCharsets.UTF_8);
    }
}
