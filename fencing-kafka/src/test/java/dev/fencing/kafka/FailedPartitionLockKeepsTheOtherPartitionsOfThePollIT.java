package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.size;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.spi.PartitionTakenOverException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * When a unit's lock of one partition fails with {@link PartitionTakenOverException}, the other partitions
 * of the same poll (sorted after the failing one) were never opened in the unit; the rewind must still seek
 * them back to their first polled record, or those records are neither applied nor dead-lettered and the next
 * unit of that partition commits past them.
 *
 * <p>The scenario, as in ExpelledMemberIT but with two partitions: member A stalls in its handler on a
 * record of p0 (its unit locks p0 only) and is expelled; member B takes p0 and p1, and its first poll holds
 * p0's record and p1's record w0. B locks p0 first (sorted order) and waits for A's unit; A is released and
 * commits p0; B's lock fails as stale, the rewind seeks p0 only, and w0 of p1 is lost.
 */
class FailedPartitionLockKeepsTheOtherPartitionsOfThePollIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_failed_lock_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aPartitionLockThatFailsAsStaleRewindsEveryPolledPartitionSoNoRecordIsLost() throws Exception {
        String topic = newTopic("lockloss", 2);
        String group = newGroup("lockloss");
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aInHandler = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        try (KafkaProducer<String, String> producer = producer()) {
            send(producer, topic, 0, "sku-0", "v0", 1);

            Map<String, Object> stalling = consumerConfig(group);
            stalling.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2_000);
            FencedConsumer<String, String> a = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(stalling)
                    .topics(topic)
                    .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                    .handler((record, token) -> {
                        applied.add("A:" + record.value());
                        if (aInHandler.getCount() > 0) {
                            aInHandler.countDown();
                            awaitLatch(releaseA);
                        }
                    })
                    .build();
            a.start();
            assertThat(aInHandler.await(60, TimeUnit.SECONDS)).isTrue();
            // A's unit holds p0 only; p1 gets a record A never polls
            send(producer, topic, 1, "sku-1", "w0", 1);

            try (FencedConsumer<String, String> b = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(consumerConfig(group))
                    .topics(topic)
                    .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                    .handler((record, token) -> applied.add("B:" + record.value()))
                    .build()) {
                b.start();
                // B's first poll holds v0 (p0) and w0 (p1); its lock of p0 waits for A's unit
                await().atMost(Duration.ofSeconds(60)).until(() -> waitersOnAPartitionLock() > 0);
                releaseA.countDown();
                a.close();

                send(producer, topic, 1, "sku-1", "w1", 2);
                // records of one partition are handled in order: once w1 is applied, w0 was applied or lost
                await().atMost(Duration.ofSeconds(60)).until(() -> applied.contains("B:w1"));
            }
        }
        long deadLettered = size(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX);
        long storedP1 = postgres.jdbi.withHandle(h -> h.createQuery("SELECT next_offset FROM fencing.kafka_offset"
                        + " WHERE consumer_group = :g AND kafka_partition = 1")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
        // w0 (p1 offset 0) must be applied (or at least dead-lettered); the store says p1 is done up to 2
        assertThat(applied)
                .as("stored offset of p1 is %d, dead letters %d", storedP1, deadLettered)
                .containsExactlyInAnyOrder("A:v0", "B:w0", "B:w1");
    }

    private static void send(
            KafkaProducer<String, String> producer, String topic, int partition, String key, String value, long token)
            throws Exception {
        ProducerRecord<String, String> record =
                FencedRecords.stamp(new ProducerRecord<>(topic, partition, key, value), token);
        producer.send(record).get(30, TimeUnit.SECONDS);
    }

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
