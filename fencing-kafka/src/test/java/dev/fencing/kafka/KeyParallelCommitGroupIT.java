package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Commit groups of the key-parallel consumer with a transactional handler ({@code groupMaxRecords}): the records
 * of one poll go into one group (the whole poll is queued before a worker takes a group, and a group takes its
 * records at once), so which records share a transaction is known here without any timing.
 */
class KeyParallelCommitGroupIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_commit_group_it");
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE applied (seq BIGSERIAL, topic TEXT, kafka_offset BIGINT, record_key TEXT,"
                    + " token BIGINT)");
            h.execute("CREATE TABLE contended (id TEXT PRIMARY KEY, n INT NOT NULL)");
            h.execute("INSERT INTO contended VALUES ('x', 0), ('y', 0)");
        });
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /** One handler call: the record's offset and the transaction it ran in. */
    private record Call(long offset, long txid) {}

    @Test
    void aGroupDecidesEachRecordAgainstTheTokenItsEarlierRecordsRaisedSoAStaleOneAfterAFreshOneIsRefused() {
        // given: key a's records fresh 5, stale 3, equal 5, fresh 6; key b's fresh 2, stale 1; key c's fresh 4;
        // none of the keys has a stored watermark, so only the group's own decisions stand between 3 and 1 and
        // the handler
        String topic = newTopic("commit-group", 1);
        String[][] log = {{"a", "5"}, {"b", "2"}, {"a", "3"}, {"c", "4"}, {"a", "5"}, {"b", "1"}, {"a", "6"}};
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < log.length; i++) {
                producer.send(FencedRecords.create(topic, log[i][0], "r" + i, Long.parseLong(log[i][1])));
            }
            producer.flush();
        }
        String group = newGroup("commit-group");
        List<Call> calls = new ArrayList<>();

        // when
        try (FencedConsumer<String, String> consumer = consumer(group, topic, (handle, record, token) -> {
            apply(handle, record, token);
            synchronized (calls) {
                calls.add(new Call(record.offset(), txid(handle)));
            }
        })) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == log.length);
        }

        // then: the fresh ones applied once each, in offset order per key, all in one transaction; the stale ones
        // dead-lettered
        List<String> applied = applied(topic);
        assertThat(applied).containsExactlyInAnyOrder("a@0:5", "b@1:2", "c@3:4", "a@4:5", "a@6:6");
        assertThat(applied.stream().filter(r -> r.startsWith("a@"))).containsExactly("a@0:5", "a@4:5", "a@6:6");
        assertThat(calls.stream().map(Call::txid).distinct()).as("one group").hasSize(1);
        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter : readAll(topic + ".dlt", 2)) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            deadLettered.add(header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET));
        }
        assertThat(deadLettered).containsExactlyInAnyOrder("2", "5");
    }

    @Test
    void aDeadlockInsideAGroupRollsItBackAndRerunsItRecordByRecordApplyingEachRecordOnce() throws Exception {
        // given: eight keys, one record each; the last record's handler, the first time it runs, takes row x of
        // a table and then waits for row y, which another transaction holds while it waits for x: a deadlock
        // PostgreSQL breaks by failing the group's statement (the other transaction never checks, its
        // deadlock_timeout is ten minutes)
        String topic = newTopic("commit-group-deadlock", 1);
        int records = 8;
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < records; i++) {
                producer.send(FencedRecords.create(topic, "k" + i, "r" + i, 7));
            }
            producer.flush();
        }
        String group = newGroup("commit-group-deadlock");
        List<Call> calls = new ArrayList<>();
        AtomicBoolean first = new AtomicBoolean(true);
        CountDownLatch holdsX = new CountDownLatch(1);
        CountDownLatch otherWaits = new CountDownLatch(1);
        try (Handle other = postgres.jdbi.open()) {
            other.begin();
            other.execute("SET LOCAL deadlock_timeout = '10min'");
            other.execute("UPDATE contended SET n = n + 1 WHERE id = 'y'");
            int otherPid = other.createQuery("SELECT pg_backend_pid()")
                    .mapTo(Integer.class)
                    .one();

            // when
            try (FencedConsumer<String, String> consumer = consumer(group, topic, (handle, record, token) -> {
                apply(handle, record, token);
                synchronized (calls) {
                    calls.add(new Call(record.offset(), txid(handle)));
                }
                if (record.offset() == records - 1 && first.getAndSet(false)) {
                    handle.execute("UPDATE contended SET n = n + 1 WHERE id = 'x'");
                    holdsX.countDown();
                    awaitLatch(otherWaits);
                    handle.execute("UPDATE contended SET n = n + 1 WHERE id = 'y'"); // fails: deadlock
                }
            })) {
                CompletableFuture<Void> stopped = consumer.start();
                assertThat(holdsX.await(60, TimeUnit.SECONDS)).isTrue();
                CompletableFuture<Void> otherTakesX = CompletableFuture.runAsync(
                        () -> other.execute("UPDATE contended SET n = n + 1 WHERE id = 'x'"));
                await().atMost(Duration.ofSeconds(30)).until(() -> waitsForALock(otherPid));
                otherWaits.countDown();
                otherTakesX.get(60, TimeUnit.SECONDS); // the group was rolled back, x released
                other.commit();
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> committed(group, topic) == records || stopped.isDone());
                assertThat(stopped).as("the consumer still runs").isNotDone();
            }
        }

        // then: the first transaction held every record and ran all of them (the last one failing); each ran
        // again alone, and each effect is there once
        Map<Long, List<Long>> txidsByOffset = new HashMap<>();
        calls.forEach(c -> txidsByOffset
                .computeIfAbsent(c.offset(), o -> new ArrayList<>())
                .add(c.txid()));
        long groupTx = txidsByOffset.get((long) records - 1).get(0);
        for (long offset = 0; offset < records; offset++) {
            assertThat(txidsByOffset.get(offset)).as("offset %d", offset).hasSize(2);
            assertThat(txidsByOffset.get(offset).get(0)).as("offset %d", offset).isEqualTo(groupTx);
            assertThat(txidsByOffset.get(offset).get(1)).as("offset %d", offset).isNotEqualTo(groupTx);
        }
        assertThat(applied(topic))
                .containsExactly("k0@0:7", "k1@1:7", "k2@2:7", "k3@3:7", "k4@4:7", "k5@5:7", "k6@6:7", "k7@7:7");
    }

    @Test
    void aHandlerFailureInsideAGroupAppliesTheRecordsBeforeItOnceAndStopsTheConsumerAtTheFailedRecord()
            throws Exception {
        // given: six keys, one record each, all in one group; the fourth record's handler always fails
        String topic = newTopic("commit-group-failure", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 6; i++) {
                producer.send(FencedRecords.create(topic, "k" + i, "r" + i, 3));
            }
            producer.flush();
        }
        String group = newGroup("commit-group-failure");
        List<Call> calls = new ArrayList<>();

        // when
        try (FencedConsumer<String, String> consumer = consumer(group, topic, (handle, record, token) -> {
            apply(handle, record, token);
            synchronized (calls) {
                calls.add(new Call(record.offset(), txid(handle)));
            }
            if (record.offset() == 3) {
                throw new IllegalStateException("down");
            }
        })) {
            CompletableFuture<Void> stopped = consumer.start();

            // then: the consumer stops on the fourth record
            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasMessageContaining("offset 3")
                    .hasRootCauseMessage("down");
        }
        // and: the group ran the first four and was rolled back; the first three ran again alone and are applied
        // once, the fourth failed again alone, the last two never ran again; the stored offset is the failed one
        Map<Long, List<Long>> txidsByOffset = new HashMap<>();
        calls.forEach(c -> txidsByOffset
                .computeIfAbsent(c.offset(), o -> new ArrayList<>())
                .add(c.txid()));
        assertThat(txidsByOffset.keySet()).containsExactlyInAnyOrder(0L, 1L, 2L, 3L);
        txidsByOffset.values().forEach(txids -> assertThat(txids).hasSize(2).doesNotHaveDuplicates());
        assertThat(applied(topic)).containsExactly("k0@0:3", "k1@1:3", "k2@2:3");
        assertThat(postgres.jdbi.<Long, RuntimeException>withHandle(
                        h -> h.createQuery("SELECT next_offset FROM fencing.kafka_offset WHERE consumer_group = :g")
                                .bind("g", group)
                                .mapTo(Long.class)
                                .one()))
                .isEqualTo(3L);
    }

    private static FencedConsumer<String, String> consumer(
            String group, String topic, TransactionalRecordHandler<Handle, String, String> handler) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .maxConcurrency(2)
                .groupMaxRecords(100)
                .groupMaxTime(Duration.ofMinutes(1))
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), handler)
                .build();
    }

    private static void apply(Handle handle, ConsumerRecord<String, String> record, long token) {
        handle.createUpdate("INSERT INTO applied (topic, kafka_offset, record_key, token) VALUES (:p, :o, :k, :t)")
                .bind("p", record.topic())
                .bind("o", record.offset())
                .bind("k", record.key())
                .bind("t", token)
                .execute();
    }

    private static long txid(Handle handle) {
        return handle.createQuery("SELECT txid_current()").mapTo(Long.class).one();
    }

    /** The committed effects on {@code topic}, in the order they were inserted: "key@offset:token". */
    private static List<String> applied(String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT record_key || '@' || kafka_offset || ':' || token"
                        + " FROM applied WHERE topic = :topic ORDER BY seq")
                .bind("topic", topic)
                .mapTo(String.class)
                .list());
    }

    private static boolean waitsForALock(int pid) {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid AND wait_event_type = 'Lock'")
                                .bind("pid", pid)
                                .mapTo(Integer.class)
                                .one()
                        == 1);
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("latch not released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
