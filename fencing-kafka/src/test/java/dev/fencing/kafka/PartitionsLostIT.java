package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code onPartitionsLost}: member A is expelled (it exceeds {@code max.poll.interval.ms}) in the middle of a
 * unit that spans several polls, and learns it at the unit's next poll. That unit is rolled back with the
 * store's transaction, whatever A handled in it, and member B, which took the partition and waited on A's
 * lock, applies those records itself, each once. Without the roll-back on loss, A would commit its unit after
 * it had left the group.
 */
class PartitionsLostIT {
    private static final int RECORDS = 20;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_lost_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_offset BIGINT, member TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aUnitOpenWhenItsPartitionIsLostIsRolledBackAndTheNewOwnerAppliesItsRecordsOnce() throws Exception {
        // given: member A in a unit spanning polls, stalled inside its handler on the partition's first record
        String topic = newTopic("lost", 1);
        String group = newGroup("lost");
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(FencedRecords.create(topic, "sku-" + i % 5, "v" + i, i + 1));
            }
            producer.flush();
        }
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        List<Long> handledByA = new CopyOnWriteArrayList<>();
        CountDownLatch aInHandler = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        Map<String, Object> stalling = consumerConfig(group);
        stalling.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2_000);
        stalling.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10);
        try (FencedConsumer<String, String> a = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(stalling)
                .commitMaxRecords(1_000)
                .commitInterval(Duration.ofSeconds(60))
                .topics(topic)
                .transactionalHandler(store, (handle, record, token) -> {
                    handle.execute("INSERT INTO applied VALUES (?, 'A')", record.offset());
                    handledByA.add(record.offset());
                    if (aInHandler.getCount() > 0) {
                        aInHandler.countDown();
                        awaitLatch(releaseA);
                    }
                })
                .build()) {
            a.start();
            assertThat(aInHandler.await(60, TimeUnit.SECONDS)).isTrue();

            // when: A is expelled, B takes the partition and waits on A's lock, then A goes on
            try (FencedConsumer<String, String> b = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(consumerConfig(group))
                    .topics(topic)
                    .transactionalHandler(
                            store,
                            (handle, record, token) ->
                                    handle.execute("INSERT INTO applied VALUES (?, 'B')", record.offset()))
                    .build()) {
                b.start();
                await().atMost(Duration.ofSeconds(60)).until(() -> waitersOnAPartitionLock() > 0);
                releaseA.countDown();
                await().atMost(Duration.ofSeconds(60)).until(() -> storedOffset(group) == RECORDS);
            }
        }

        // then: A handled offsets 0 to 9 in its unit, but B applied them; every record is applied once
        assertThat(handledByA).contains(0L, 9L);
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_offset || ':' || member FROM applied ORDER BY kafka_offset")
                        .mapTo(String.class)
                        .list());
        assertThat(applied).hasSize(RECORDS).startsWith("0:B").contains("9:B");
        assertThat(applied.stream().map(row -> row.substring(0, row.indexOf(':'))))
                .doesNotHaveDuplicates();
    }

    private static long storedOffset(String group) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT coalesce(sum(next_offset), 0) FROM fencing.kafka_offset WHERE consumer_group = :g")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
    }

    /** Sessions of this test's database waiting for a partition's advisory lock. */
    private static int waitersOnAPartitionLock() {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                        + " AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname ="
                        + " current_database())")
                .mapTo(Integer.class)
                .one());
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
