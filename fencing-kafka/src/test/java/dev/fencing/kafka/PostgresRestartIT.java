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

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedPostgresServer;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store's PostgreSQL restarted under a running consumer: a real server of this class's own (not the JVM's
 * shared one) is stopped with a fast shutdown, which terminates every connection of the consumer's pool, while
 * the handler of record {@code r-175} runs, and started again on the same port once the consumer is seen
 * retrying against the stopped server. The restart is driven from the handler, so the failure always lands in
 * the middle of a unit (serial) or of the running groups (key-parallel), never between them.
 *
 * <p>The stream has stale records (a key's token below one already applied) and the policy is STRICT: a
 * watermark raised by a rolled-back attempt would refuse that attempt's retry, and the record would be missing.
 */
class PostgresRestartIT {
    private static final int RECORDS = 400;
    private static final int KEYS = 20;
    private static final String RESTART_AT = "r-175";

    private static EmbeddedPostgresServer server;
    private static Jdbi jdbi; // the test's own look, unpooled: each query connects anew

    @BeforeAll
    static void startServer() {
        server = EmbeddedPostgresServer.builder().build();
        Flyway.configure()
                .dataSource(server.jdbcUrl(), server.user(), server.password())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        jdbi = Jdbi.create(server.jdbcUrl(), server.user(), server.password());
        jdbi.useHandle(h ->
                h.execute("CREATE TABLE effects (topic TEXT, kafka_partition INT, kafka_offset BIGINT, value TEXT)"));
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    /**
     * {@value #RECORDS} records over {@value #KEYS} keys, each key's tokens rising by one per record, except
     * that every seventh record from the third round on carries a token below its key's last one (stale).
     */
    private static KafkaFixture.Expected publish(String topic) {
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                long round = i / KEYS;
                long token = round >= 2 && i % 7 == 3 ? round - 1 : round + 1;
                producer.send(FencedRecords.create(topic, "k" + (i % KEYS), "r-" + i, token));
            }
            producer.flush();
        }
        KafkaFixture.Expected expected = KafkaFixture.expected(readAll(topic, RECORDS));
        assertThat(expected.stale()).isNotEmpty();
        return expected;
    }

    /** The consumer's pool: a second to find a connection, so that attempts fail fast while the server is down. */
    private static HikariDataSource pool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(server.jdbcUrl());
        config.setUsername(server.user());
        config.setPassword(server.password());
        config.setMaximumPoolSize(8); // maxConcurrency 4 + 2, and room
        config.setConnectionTimeout(1_000);
        return new HikariDataSource(config);
    }

    private static FencedConsumerBuilder<String, String> consumer(
            String topic, String group, Jdbi store, Restart restart) {
        Map<String, Object> config = consumerConfig(group);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 20);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 25);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .fencePolicy(FencePolicy.STRICT)
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(store), (handle, record, token) -> {
                    restart.at(record);
                    handle.execute(
                            "INSERT INTO effects VALUES (?, ?, ?, ?)",
                            topic,
                            record.partition(),
                            record.offset(),
                            record.value());
                });
    }

    /**
     * Restarts the server from the handler of {@link #RESTART_AT}'s first attempt: another thread stops it, the
     * handler waits until it is down (its transaction's connection is gone), returns to a statement that fails,
     * and the server is started again once {@code outageSeen} holds.
     */
    private static final class Restart {
        private final String topic;
        private final AtomicBoolean triggered = new AtomicBoolean();
        private final CountDownLatch down = new CountDownLatch(1);
        private final AtomicLong committedBefore = new AtomicLong(-1);
        private volatile BooleanSupplier outageSeen;
        private volatile CompletableFuture<Void> done;

        Restart(String topic) {
            this.topic = topic;
        }

        void startWhen(BooleanSupplier outageSeen) {
            this.outageSeen = outageSeen;
        }

        void at(ConsumerRecord<String, String> record) {
            if (!record.value().equals(RESTART_AT) || !triggered.compareAndSet(false, true)) {
                return;
            }
            // a thread of its own: the common pool may have a single thread on a small machine
            done = CompletableFuture.runAsync(
                    () -> {
                        committedBefore.set(effects(topic).size());
                        server.stop();
                        down.countDown();
                        await().atMost(Duration.ofSeconds(30)).until(outageSeen::getAsBoolean);
                        server.start();
                    },
                    task -> new Thread(task, "postgres-restart").start());
            try {
                assertThat(down.await(30, TimeUnit.SECONDS)).as("server down").isTrue();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        /** Waits for the restart to end; fails if it did not happen or failed. */
        void completed() throws Exception {
            assertThat(triggered).as("restart triggered").isTrue();
            done.get(60, TimeUnit.SECONDS);
            assertThat(server.isRunning()).isTrue();
        }

        long committedBefore() {
            return committedBefore.get();
        }
    }

    private static List<String> effects(String topic) {
        return jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM effects WHERE topic = ?")
                        .bind(0, topic)
                        .mapTo(String.class)
                        .list());
    }

    private static long storedOffset(String group) {
        return jdbi.withHandle(h -> h.createQuery(
                        "SELECT coalesce(sum(next_offset), 0) FROM fencing.kafka_offset WHERE consumer_group = ?")
                .bind(0, group)
                .mapTo(Long.class)
                .one());
    }

    private static Set<String> deadLettered(String topic, int atLeast) {
        Set<String> origins = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter :
                readAll(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, atLeast)) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            // at least once: a rolled-back unit's dead letters are written again by its retry
            origins.add(header(deadLetter, DeadLetterHeaders.ORIGIN_PARTITION) + "@"
                    + header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET));
        }
        return origins;
    }

    /** Runs the consumer through the restart until everything is committed, and checks what it applied. */
    private static void ridesOutTheRestart(
            FencedConsumer<String, String> consumer,
            Restart restart,
            String topic,
            String group,
            KafkaFixture.Expected expected)
            throws Exception {
        CompletableFuture<Void> stopped = consumer.start();
        await().atMost(Duration.ofSeconds(60))
                .until(() ->
                        stopped.isDone() || (committed(group, topic) == RECORDS && storedOffset(group) == RECORDS));
        assertThat(stopped).as("consumer still running").isNotDone();
        restart.completed();
        await().atMost(Duration.ofSeconds(30)).until(() -> consumer.state() == ConsumerState.RUNNING);
        assertThat(consumer.retries()).isPositive();

        List<String> effects = effects(topic);
        assertThat(effects).as("applied at most once").doesNotHaveDuplicates();
        assertThat(new HashSet<>(effects))
                .as("every fresh record applied, no stale one")
                .isEqualTo(expected.applied());
        assertThat(deadLettered(topic, expected.stale().size())).isEqualTo(expected.stale());
    }

    @Test
    void aSerialConsumerRidesOutARestartOfItsDatabaseAndAppliesEveryRecordOnce() throws Exception {
        // given
        String topic = newTopic("pg-restart-serial", 1);
        String group = newGroup("pg-restart-serial");
        KafkaFixture.Expected expected = publish(topic);
        Restart restart = new Restart(topic);
        try (HikariDataSource pool = pool();
                FencedConsumer<String, String> consumer = consumer(topic, group, Jdbi.create(pool), restart)
                        .commitMaxRecords(50)
                        .build()) {
            // several attempts fail against the stopped server before it comes back
            restart.startWhen(() -> consumer.state() == ConsumerState.RETRYING && consumer.retries() >= 2);

            // when, then
            ridesOutTheRestart(consumer, restart, topic, group, expected);
        }
        // units hold at most 50 records plus one poll of 25: those before r-175's were committed
        assertThat(restart.committedBefore()).as("applied before the restart").isPositive();
    }

    @Test
    void aKeyParallelConsumerWithCommitGroupsRidesOutARestartOfItsDatabaseAndAppliesEveryRecordOnce() throws Exception {
        // given
        String topic = newTopic("pg-restart-parallel", 1);
        String group = newGroup("pg-restart-parallel");
        KafkaFixture.Expected expected = publish(topic);
        Restart restart = new Restart(topic);
        try (HikariDataSource pool = pool();
                FencedConsumer<String, String> consumer = consumer(topic, group, Jdbi.create(pool), restart)
                        .maxConcurrency(4)
                        .groupMaxRecords(8)
                        .build()) {
            restart.startWhen(() -> consumer.state() == ConsumerState.RETRYING && consumer.retries() >= 2);

            // when, then
            ridesOutTheRestart(consumer, restart, topic, group, expected);
        }
    }

    @Test
    void withoutRetriesTheSameRestartStopsTheConsumerWithNothingCommittedPastTheFailedUnit() throws Exception {
        // given: the serial consumer above, with fencing.retry.max.ms=0
        String topic = newTopic("pg-restart-no-retry", 1);
        String group = newGroup("pg-restart-no-retry");
        publish(topic);
        Restart restart = new Restart(topic);
        try (HikariDataSource pool = pool();
                FencedConsumer<String, String> consumer = consumer(topic, group, Jdbi.create(pool), restart)
                        .commitMaxRecords(50)
                        .retryMaxTime(Duration.ZERO)
                        .build()) {
            restart.startWhen(() -> consumer.state() == ConsumerState.FAILED);

            // when
            CompletableFuture<Void> stopped = consumer.start();

            // then
            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class);
            restart.completed();
            assertThat(consumer.state()).isEqualTo(ConsumerState.FAILED);
            assertThat(consumer.retries()).isZero();
        }
        assertThat(committed(group, topic)).isLessThanOrEqualTo(175);
        assertThat(effects(topic)).hasSize((int) restart.committedBefore());
    }
}
