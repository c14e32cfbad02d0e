package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Defect 3, with a member really expelled: member A stalls inside its handler longer than {@code
 * max.poll.interval.ms}, the group gives its partition to member B, and A is then released. B's unit must
 * not run its handler on the records A's still-open unit is handling: it waits on the partition's lock and
 * then reads on after what A committed, so no record is applied twice.
 */
class ExpelledMemberIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_expelled_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void theNewOwnerWaitsForTheExpelledMembersUnitInsteadOfApplyingItsRecordsAgain() throws Exception {
        String topic = newTopic("expelled", 1);
        String group = newGroup("expelled");
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aInHandler = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "v0", 1);

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

            try (FencedConsumer<String, String> b = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(consumerConfig(group))
                    .topics(topic)
                    .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                    .handler((record, token) -> applied.add("B:" + record.value()))
                    .build()) {
                b.start();
                // A is expelled after 2 s and B takes the partition; B's unit then either waits for A's lock
                // (fenced) or applies v0 a second time (unfenced)
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> waitersOnAPartitionLock() > 0 || applied.contains("B:v0"));
                releaseA.countDown();
                a.close();

                sendFenced(producer, topic, "sku-1", "v1", 1);
                await().atMost(Duration.ofSeconds(60)).until(() -> applied.contains("B:v1"));
            }
        }
        assertThat(applied).containsExactly("A:v0", "B:v1");
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
