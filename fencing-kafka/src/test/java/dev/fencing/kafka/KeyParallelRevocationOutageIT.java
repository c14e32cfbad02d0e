package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store goes away exactly while a revocation commits: member a's poll thread is in the revocation
 * callback, waiting for a record of the revoked partition, when the test cuts a's connection to PostgreSQL and
 * lets the record finish. The revocation's progress commit fails, transiently, and the consumer rides it out.
 * The partition was revoked all the same (it is member b's now), so a must not keep anything of it: before the
 * fix a kept the partition's lanes and its pause, saved an offset for it in the store at its next commit (b,
 * its owner, had finished none of its records), and then stopped for good resuming a partition it did not own.
 */
class KeyParallelRevocationOutageIT {
    private static final int OTHERS = 20;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_revocation_outage_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aStoreOutageDuringTheRevocationCommitIsRiddenOutAndTheRevokedPartitionIsNeverCommittedByItsOldOwner() {
        String topic = newTopic("parallel-revocation-outage", 2);
        String group = newGroup("parallel-revocation-outage");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        // partition 1: a record that a holds until its revocation, then records of other keys that finish above
        // it (so that the partition is paused, with more than maxInFlightPerPartition held); partition 0 is empty
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.stamp(new ProducerRecord<>(topic, 1, "held", "held"), 1));
            for (int i = 0; i < OTHERS; i++) {
                producer.send(FencedRecords.stamp(new ProducerRecord<>(topic, 1, "k-" + i, "v-" + i), 1));
            }
            producer.flush();
        }
        PostgresWatermarkStore direct = PostgresWatermarkStore.create(postgres.jdbi);
        Set<String> handledByA = ConcurrentHashMap.newKeySet();
        Set<String> handledByB = ConcurrentHashMap.newKeySet();
        CountDownLatch heldRunning = new CountDownLatch(1);
        CountDownLatch releaseHeld = new CountDownLatch(1);
        CountDownLatch openPartition1ToB = new CountDownLatch(1);

        try (CuttableProxy proxy = new CuttableProxy(port(postgres.database.jdbcUrl()));
                FencedConsumer<String, String> a = consumer(topic, group, "a")
                        .watermarkStore(PostgresWatermarkStore.create(Jdbi.create(
                                proxy.through(postgres.database.jdbcUrl()),
                                postgres.database.user(),
                                postgres.database.password())))
                        .handler((record, token) -> {
                            if (record.value().equals("held")) {
                                heldRunning.countDown();
                                await(releaseHeld);
                            }
                            handledByA.add(record.value());
                        })
                        .build();
                FencedConsumer<String, String> b = consumer(topic, group, "b")
                        .watermarkStore(direct)
                        .handler((record, token) -> {
                            if (record.partition() == 1) {
                                await(openPartition1ToB); // b finishes nothing of partition 1 until the checks
                            }
                            handledByB.add(record.value());
                        })
                        .build()) {
            try {
                CompletableFuture<Void> aStopped = a.start();
                await(heldRunning);
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> handledByA.size() == OTHERS);

                // when: b joins; a's revocation waits for the held record, and the store goes away before it commits
                b.start();
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> revoking(a.clientId()));
                proxy.cut();
                releaseHeld.countDown();
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> aStopped.isDone() || a.retries() >= 1);
                proxy.heal();
                // a record for a's remaining partition: once it is committed, a has committed since the rebalance
                try (KafkaProducer<String, String> producer = producer()) {
                    producer.send(FencedRecords.stamp(new ProducerRecord<>(topic, 0, "late", "late"), 1));
                }
                Awaitility.await()
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> aStopped.isDone() || direct.loadOffset(group, p0) == 1);

                // then: no offset was saved for partition 1, whose owner b finished none of its records, and a runs on
                SoftAssertions soft = new SoftAssertions();
                soft.assertThat(b.assignment()).as("b's partitions").contains(p1);
                soft.assertThat(direct.loadOffset(group, p1))
                        .as("the stored offset of %s, revoked from a; its owner b has finished none of its records", p1)
                        .isEqualTo(-1);
                soft.assertThat(a.failure()).as("a's failure").isNull();
                soft.assertThat(a.state()).as("a's state").isEqualTo(ConsumerState.RUNNING);
                soft.assertAll();

                // and b, the owner, handles and commits partition 1 from where the store has it
                openPartition1ToB.countDown();
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == OTHERS + 2);
                assertThat(aStopped).isNotDone();
                assertThat(handledByA).contains("late");
                assertThat(handledByB).contains("held").hasSize(OTHERS + 1);
                assertThat(direct.loadOffset(group, p1)).isEqualTo(OTHERS + 1);
            } finally {
                releaseHeld.countDown(); // a failed check does not leave the members' closes waiting on them
                openPartition1ToB.countDown();
            }
        }
    }

    private static FencedConsumerBuilder<String, String> consumer(String topic, String group, String member) {
        Map<String, Object> config = consumerConfig(group);
        // member ids begin with the client id: the range assignor gives a partition 0 and b partition 1
        config.put("client.id", group + "-" + member);
        config.put("heartbeat.interval.ms", 200);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 20);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .maxInFlightPerPartition(4)
                // nothing is committed before the revocation: the store has no offset for partition 1
                .commitInterval(Duration.ofMinutes(10))
                .topics(topic);
    }

    /** Whether the consumer's poll thread (named after its client id) is in the revocation callback now. */
    private static boolean revoking(String clientId) {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().equals(clientId))
                .flatMap(e -> Arrays.stream(e.getValue()))
                .anyMatch(frame -> frame.getMethodName().equals("onPartitionsRevoked"));
    }

    private static int port(String jdbcUrl) {
        return URI.create(jdbcUrl.substring("jdbc:".length())).getPort();
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(60, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
