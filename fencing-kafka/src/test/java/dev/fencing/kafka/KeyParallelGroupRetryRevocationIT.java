package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A commit group holds records of two partitions, q of partition 0 at its head, then p-0 to p-4 of partition 1
 * (both workers are held by a record each while they are polled, so that one group takes their lanes in order).
 * The handler of p-4 fails once (a handler failure the application named), so the group is rolled back and rerun
 * record by record; from then on q's handler keeps failing too, and the worker waits out q's retries with the
 * records of partition 1 still in its hands. A second member joins
 * (cooperative rebalancing: only partition 1 moves). The revocation of partition 1 must not wait for the retry
 * of a record of partition 0: before the fix the records of partition 1 stayed counted as running while the
 * worker waited (its wait woke only for partition 0's cancellation), the revocation waited the drain timeout
 * twice and stopped the consumer with a HandlersStillRunningException, although no handler was running.
 */
class KeyParallelGroupRetryRevocationIT {
    private static final int OTHERS = 5;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_group_retry_revocation_it");
        postgres.jdbi.useHandle(h ->
                h.execute("CREATE TABLE applied (topic TEXT, kafka_partition INT, kafka_offset BIGINT, member TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void revokingAPartitionIsNotHeldByTheRetryOfARecordOfAnotherPartitionInTheSameCommitGroup() {
        String topic = newTopic("parallel-group-retry-revocation", 2);
        String group = newGroup("parallel-group-retry-revocation");
        AtomicBoolean serviceDown = new AtomicBoolean(true);
        List<String> calls = new CopyOnWriteArrayList<>();
        CountDownLatch blocking = new CountDownLatch(2);
        CountDownLatch unblock = new CountDownLatch(1);
        try (FencedConsumer<String, String> a = consumer(topic, group, "a", serviceDown, calls, blocking, unblock);
                FencedConsumer<String, String> b = consumer(topic, group, "b", serviceDown, calls, blocking, unblock);
                KafkaProducer<String, String> producer = producer()) {
            try {
                run(a, b, producer, topic, group, serviceDown, calls, blocking, unblock);
            } finally {
                unblock.countDown(); // a failed check does not leave the closes waiting for the held records
            }
        }
    }

    private static void run(
            FencedConsumer<String, String> a,
            FencedConsumer<String, String> b,
            KafkaProducer<String, String> producer,
            String topic,
            String group,
            AtomicBoolean serviceDown,
            List<String> calls,
            CountDownLatch blocking,
            CountDownLatch unblock) {
        TopicPartition p1 = new TopicPartition(topic, 1);
        CompletableFuture<Void> aStopped = a.start();
        // both workers of a are held by a record each, while q and then p-0 .. p-4 are polled: the next group
        // takes their lanes in that order, [q, p-0 .. p-4]
        send(producer, topic, 0, "b-1");
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> blocking.getCount() == 1);
        send(producer, topic, 0, "b-2");
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> blocking.getCount() == 0);
        send(producer, topic, 0, "q");
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> a.recordsInFlight() == 3);
        for (int i = 0; i < OTHERS; i++) {
            send(producer, topic, 1, "p-" + i);
        }
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> a.recordsInFlight() == OTHERS + 3);
        unblock.countDown();
        // the group [q, p-0 .. p-4] failed at p-4 and is rerun record by record: q waits to run again
        Awaitility.await("q run again after the group's rollback, and failing")
                .atMost(Duration.ofSeconds(60))
                .until(() -> aStopped.isDone()
                        || calls.stream().filter(c -> c.startsWith("q ")).count() >= 3);
        List<String> firstGroup = List.copyOf(calls).subList(2, OTHERS + 3);
        assertThat(firstGroup)
                .as("the handler calls of the group after b-1 and b-2, on one worker")
                .containsExactlyElementsOf(IntStream.range(-1, OTHERS)
                        .mapToObj(i -> (i < 0 ? "q " : "p-" + i + " ")
                                + firstGroup.get(0).split(" ")[1])
                        .toList());
        assertThat(applied(topic, "a")).as("applied by a while q fails").containsExactlyInAnyOrder("0@0", "0@1");

        // when: b joins, and partition 1 is revoked from a
        CompletableFuture<Void> bStopped = b.start();
        Awaitility.await()
                .atMost(Duration.ofSeconds(60))
                .until(() -> aStopped.isDone() || applied(topic, "b").size() == OTHERS);
        assertThat(a.failure()).as("a's failure").isNull();
        assertThat(b.assignment()).as("b's partitions").containsExactly(p1);

        // then: a runs on, and applies q once the service is back
        serviceDown.set(false);
        Awaitility.await()
                .atMost(Duration.ofSeconds(60))
                .until(() -> aStopped.isDone() || committed(group, topic) == OTHERS + 3);
        assertThat(a.failure()).as("a's failure").isNull();
        assertThat(aStopped).isNotDone();
        assertThat(bStopped).isNotDone();
        assertThat(applied(topic, "a")).containsExactlyInAnyOrder("0@0", "0@1", "0@2");
        assertThat(applied(topic, "b")).hasSize(OTHERS).doesNotHaveDuplicates();
    }

    /**
     * A revocation does not wait for records that cannot finish before a retry back-off ends. Both workers of
     * member a are held by b-1 and b-2 while hold-1 (partition 1) and then hold-0 (partition 0) are polled, so
     * that one commit group takes [hold-1, hold-0]; a's handler fails them for as long as it runs (a service
     * down), so the group is rolled back and rerun record by record, and hold-1 waits out a back-off of ten
     * minutes, hold-0 given back to its lane, which the group keeps. A second member joins and partition 1 moves.
     * The revocation used to wait the drain timeout (two minutes here) for hold-1 before it cancelled the
     * partition, holding the rebalance; now it cancels the partition at once, commits no further than the record
     * not done, and the new member applies it.
     */
    @Test
    void revokingAPartitionWhoseRecordWaitsOutARetryBackOffDoesNotWaitTheDrainTimeout() {
        revokeWhileAGroupWaitsOutABackOff(1);
    }

    /**
     * The same, the group being [hold-0, hold-1]: hold-0 waits out its back-off, and hold-1 (partition 1, which
     * moves) was given back to its lane, which the group keeps while it waits: it cannot start before the
     * back-off ends either.
     */
    @Test
    void revokingAPartitionWhoseRecordWasGivenBackToALaneAGroupWaitingOutABackOffKeepsDoesNotWaitTheDrainTimeout() {
        revokeWhileAGroupWaitsOutABackOff(0);
    }

    /** {@code hold-<first>} is polled first, so it runs first in the group and waits out the back-off. */
    private void revokeWhileAGroupWaitsOutABackOff(int first) {
        String topic = newTopic("parallel-backoff-revocation", 2);
        String group = newGroup("parallel-backoff-revocation");
        List<String> calls = new CopyOnWriteArrayList<>();
        CountDownLatch blocking = new CountDownLatch(2);
        CountDownLatch unblock = new CountDownLatch(1);
        try (FencedConsumer<String, String> a = stalling(topic, group, "a", calls, blocking, unblock);
                FencedConsumer<String, String> b = stalling(topic, group, "b", calls, blocking, unblock);
                KafkaProducer<String, String> producer = producer()) {
            try {
                CompletableFuture<Void> aStopped = a.start();
                send(producer, topic, 0, "b-1");
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> blocking.getCount() == 1);
                send(producer, topic, 0, "b-2");
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> blocking.getCount() == 0);
                send(producer, topic, first, "hold-" + first);
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> a.recordsInFlight() == 3);
                send(producer, topic, 1 - first, "hold-" + (1 - first));
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> a.recordsInFlight() == 4);
                unblock.countDown();
                // the group failed at its first record, which failed again alone and waits out its back-off
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> aStopped.isDone() || a.retries() == 1);
                assertThat(calls)
                        .as("the handler calls of a after b-1 and b-2")
                        .hasSize(4)
                        .endsWith("hold-" + first + " a", "hold-" + first + " a");

                // when: b joins, and partition 1 is revoked from a
                CompletableFuture<Void> bStopped = b.start();
                Awaitility.await()
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> aStopped.isDone()
                                || bStopped.isDone()
                                || applied(topic, "b").size() == 1);

                // then: b applies hold-1, which a had neither finished nor passed
                assertThat(a.failure()).as("a's failure").isNull();
                assertThat(b.assignment()).as("b's partitions").containsExactly(new TopicPartition(topic, 1));
                assertThat(applied(topic, "b")).as("applied by b").containsExactly("1@0");
                assertThat(applied(topic, "a")).as("applied by a").containsExactlyInAnyOrder("0@0", "0@1");
            } finally {
                unblock.countDown();
            }
        }
    }

    /**
     * A member of two workers whose handler holds b-1 and b-2 until {@code unblock}, and in member a fails every
     * record named hold-... (retried after ten minutes).
     */
    private static FencedConsumer<String, String> stalling(
            String topic,
            String group,
            String member,
            List<String> calls,
            CountDownLatch blocking,
            CountDownLatch unblock) {
        Map<String, Object> config = consumerConfig(group);
        config.put("client.id", group + "-" + member);
        config.put("heartbeat.interval.ms", 200);
        config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 600_000);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 600_000);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 3_600_000);
        config.put(FencedConsumerConfig.CLOSE_TIMEOUT_MS_CONFIG, 120_000);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(2)
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    calls.add(record.value() + " " + member);
                    if (record.value().startsWith("b-")) {
                        blocking.countDown();
                        await(unblock);
                    }
                    if (member.equals("a") && record.value().startsWith("hold-")) {
                        throw new IllegalStateException("pricing service down");
                    }
                    handle.execute(
                            "INSERT INTO applied VALUES (?, ?, ?, ?)",
                            topic,
                            record.partition(),
                            record.offset(),
                            member);
                })
                .build();
    }

    private static List<String> applied(String topic, String member) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT kafka_partition || '@' || kafka_offset FROM applied WHERE topic = ? AND member = ?")
                .bind(0, topic)
                .bind(1, member)
                .mapTo(String.class)
                .list());
    }

    private static FencedConsumer<String, String> consumer(
            String topic,
            String group,
            String member,
            AtomicBoolean serviceDown,
            List<String> calls,
            CountDownLatch blocking,
            CountDownLatch unblock) {
        Map<String, Object> config = consumerConfig(group);
        config.put("client.id", group + "-" + member);
        config.put("heartbeat.interval.ms", 200);
        // only the partition that moves is revoked
        config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 120_000);
        config.put(FencedConsumerConfig.CLOSE_TIMEOUT_MS_CONFIG, 2_000);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(2)
                // the group [q, p-0 .. p-4] runs whole however slow its handlers: with the default group time a
                // slow machine ended it before p-4 (q applied in it, never failing), and the test waited in vain
                .groupMaxTime(Duration.ofMinutes(1))
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    calls.add(record.value() + " " + Thread.currentThread().getName());
                    if (record.value().startsWith("b-")) {
                        blocking.countDown();
                        await(unblock);
                    }
                    boolean again = calls.stream()
                                    .filter(c -> c.startsWith(record.value() + " "))
                                    .count()
                            > 1;
                    if (record.value().equals("q") && !again) {
                        // q's call in the group outlasts the default group time, as any call may on a loaded
                        // machine: the group must still reach p-4
                        outlast(Duration.ofMillis(2 * FencedConsumerConfig.DEFAULT_GROUP_MAX_MS));
                    }
                    if (record.value().equals("p-" + (OTHERS - 1)) && !again) {
                        throw new IllegalStateException("rate limited"); // rolls the group back, once
                    }
                    if (record.value().equals("q") && again && serviceDown.get()) {
                        throw new IllegalStateException("pricing service down");
                    }
                    handle.execute(
                            "INSERT INTO applied VALUES (?, ?, ?, ?)",
                            topic,
                            record.partition(),
                            record.offset(),
                            member);
                })
                .build();
    }

    private static void send(KafkaProducer<String, String> producer, String topic, int partition, String value) {
        producer.send(FencedRecords.stamp(new ProducerRecord<>(topic, partition, value, value), 1));
        producer.flush();
    }

    /** Returns once {@code time} has passed since the call (a handler slower than a setting, for certain). */
    private static void outlast(Duration time) {
        long until = System.nanoTime() + time.toNanos();
        for (long left = time.toNanos(); left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
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
