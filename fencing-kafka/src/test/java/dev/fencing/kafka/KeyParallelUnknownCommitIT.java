package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A COMMIT whose outcome the client cannot know. The record's (or group's) transaction asks for
 * a synchronous commit while synchronous_standby_names names a standby that does not exist: the commit is
 * durable locally and then waits for the standby; the backend is terminated while it waits, so the client gets
 * 57P01 (transient) although the transaction committed. The retry must find the records applied, not apply
 * them again (a record at or below its key's applied offset is skipped in the transaction that would apply it).
 */
class KeyParallelUnknownCommitIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_unknown_commit_it");
        postgres.jdbi.useHandle(
                h -> h.execute(
                        "CREATE TABLE applied (seq BIGSERIAL, topic TEXT, kafka_offset BIGINT, record_key TEXT, token BIGINT)"));
    }

    @AfterEach
    void resetServer() {
        postgres.jdbi.useHandle(h -> {
            h.execute("ALTER SYSTEM RESET synchronous_standby_names");
            h.execute("ALTER SYSTEM RESET synchronous_commit");
            h.execute("SELECT pg_reload_conf()");
        });
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aGroupWhoseCommitAnswerIsLostIsNotAppliedTwice() throws Exception {
        lostCommitAnswer(100, "unknown-commit-group");
    }

    @Test
    void aRecordWhoseCommitAnswerIsLostIsNotAppliedTwice() throws Exception {
        lostCommitAnswer(1, "unknown-commit-record");
    }

    private void lostCommitAnswer(int groupMax, String name) throws Exception {
        String topic = newTopic(name, 1);
        String group = newGroup(name);
        int records = 8;
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < records; i++) {
                producer.send(FencedRecords.create(topic, "k" + i, "r" + i, 7));
            }
            producer.flush();
        }
        postgres.jdbi.useHandle(h -> {
            h.execute("ALTER SYSTEM SET synchronous_standby_names = 'ghost_standby'");
            h.execute("ALTER SYSTEM SET synchronous_commit = 'local'");
            h.execute("SELECT pg_reload_conf()");
        });
        AtomicBoolean first = new AtomicBoolean(true);
        AtomicInteger pid = new AtomicInteger();
        AtomicInteger calls = new AtomicInteger();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(withRetries(consumerConfig(group)))
                .topics(topic)
                .maxConcurrency(2)
                .groupMaxRecords(groupMax)
                .groupMaxTime(Duration.ofMinutes(1))
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    calls.incrementAndGet();
                    handle.createUpdate(
                                    "INSERT INTO applied (topic, kafka_offset, record_key, token) VALUES (:p, :o, :k, :t)")
                            .bind("p", record.topic())
                            .bind("o", record.offset())
                            .bind("k", record.key())
                            .bind("t", token)
                            .execute();
                    if (record.offset() == records - 1 && first.getAndSet(false)) {
                        handle.execute("SET LOCAL synchronous_commit = 'on'");
                        pid.set(handle.createQuery("SELECT pg_backend_pid()")
                                .mapTo(Integer.class)
                                .one());
                    }
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> pid.get() != 0 && waitsForSyncRep(pid.get()));
            // the transaction's commit record is flushed; its answer is never sent
            postgres.jdbi.useHandle(h -> h.createQuery("SELECT pg_terminate_backend(:pid)")
                    .bind("pid", pid.get())
                    .mapTo(Boolean.class)
                    .one());
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == records || stopped.isDone());
            assertThat(stopped).as("still running").isNotDone();
        }
        List<Map<String, Object>> dup = postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT kafka_offset, count(*) AS n FROM applied WHERE topic = :t GROUP BY kafka_offset"
                                + " HAVING count(*) <> 1")
                .bind("t", topic)
                .mapToMap()
                .list());
        long rows = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM applied WHERE topic = :t")
                .bind("t", topic)
                .mapTo(Long.class)
                .one());
        assertThat(calls.get())
                .as("the handler ran again after the lost answer")
                .isGreaterThan(records - 1);
        assertThat(dup).as("records applied twice").isEmpty();
        assertThat(rows).isEqualTo(records);
    }

    private static Map<String, Object> withRetries(Map<String, Object> config) {
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 20);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        return config;
    }

    private static boolean waitsForSyncRep(int pid) {
        return postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid AND wait_event = 'SyncRep'")
                                .bind("pid", pid)
                                .mapTo(Integer.class)
                                .one()
                        == 1);
    }
}
