package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.PostgresBackends;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Consumers that ride out their database: the store's PostgreSQL is reached through a proxy that the handler
 * cuts while it handles a record (its statement fails, new connections are refused) and the test heals once it
 * saw the consumer retrying. Every record is applied exactly once, the offsets reach the end, and no record is
 * refused as stale because of a watermark its failed attempt raised (the policy is STRICT and every record of a
 * key has a higher token than the last, so such a watermark would refuse the retry).
 */
class ConsumerRecoveryIT {
    private static final int KEYS = 10;
    private static final String CONTENT_TYPE = "content-type";
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_recovery_it");
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE applied (topic TEXT, kafka_offset BIGINT, value TEXT)");
            h.execute("CREATE TABLE lock_order (id INT PRIMARY KEY, n INT)");
            h.execute("INSERT INTO lock_order VALUES (1, 0), (2, 0)");
        });
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /**
     * {@code n} records over {@link #KEYS} keys, each key's tokens rising; value {@code v-<i>}, with a header
     * {@code content-type: text/plain}.
     */
    private static void publish(String topic, int n) {
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < n; i++) {
                ProducerRecord<String, String> record =
                        FencedRecords.create(topic, "k" + (i % KEYS), "v-" + i, 1 + i / KEYS);
                record.headers().add(CONTENT_TYPE, "text/plain".getBytes(StandardCharsets.UTF_8));
                producer.send(record);
            }
            producer.flush();
        }
    }

    private static Jdbi through(CuttableProxy proxy) {
        return Jdbi.create(
                proxy.through(postgres.database.jdbcUrl()), postgres.database.user(), postgres.database.password());
    }

    private static int port(String jdbcUrl) {
        return URI.create(jdbcUrl.substring("jdbc:".length())).getPort();
    }

    private static long appliedRows(String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM applied WHERE topic = ?")
                .bind(0, topic)
                .mapTo(Long.class)
                .one());
    }

    private static List<String> duplicates(String topic) {
        return postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT value FROM applied WHERE topic = ? GROUP BY value HAVING count(*) > 1")
                        .bind(0, topic)
                        .mapTo(String.class)
                        .list());
    }

    private static Map<String, Object> config(String group) {
        Map<String, Object> config = consumerConfig(group);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 20);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        return config;
    }

    /** Cuts the proxy in the handler of record {@code v-<cutAt>}, on its first attempt only. */
    private static TransactionalRecordHandler<Handle, String, String> cuttingHandler(
            String topic, CuttableProxy proxy, int cutAt) {
        AtomicBoolean cut = new AtomicBoolean();
        return (handle, record, token) -> {
            if (record.value().equals("v-" + cutAt) && cut.compareAndSet(false, true)) {
                proxy.cut(); // the statement below goes to a closed connection
            }
            handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
        };
    }

    private static void outageAndRecovery(
            FencedConsumer<String, String> consumer, CuttableProxy proxy, String topic, String group) throws Exception {
        CompletableFuture<Void> stopped = consumer.start();
        // several attempts fail against a refused connection before the database comes back
        Awaitility.await()
                .atMost(Duration.ofSeconds(60))
                .until(() ->
                        stopped.isDone() || (consumer.state() == ConsumerState.RETRYING && consumer.retries() >= 3));
        assertThat(stopped).isNotDone();
        assertThat(appliedRows(topic)).isLessThan(200);
        proxy.heal();
        Awaitility.await()
                .atMost(Duration.ofSeconds(60))
                .until(() -> stopped.isDone() || (appliedRows(topic) >= 200 && committed(group, topic) == 200));
        assertThat(stopped).isNotDone();
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> consumer.state() == ConsumerState.RUNNING);
    }

    @Test
    void aSerialConsumerRetriesAUnitThatLostItsDatabaseAndAppliesEveryRecordOnce() throws Exception {
        String topic = newTopic("recover-serial", 1);
        String group = newGroup("recover-serial");
        publish(topic, 200);
        try (CuttableProxy proxy = new CuttableProxy(port(postgres.database.jdbcUrl()));
                FencedConsumer<String, String> consumer = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(config(group))
                        .fencePolicy(FencePolicy.STRICT)
                        .topics(topic)
                        .transactionalHandler(
                                PostgresWatermarkStore.create(through(proxy)), cuttingHandler(topic, proxy, 120))
                        .build()) {
            outageAndRecovery(consumer, proxy, topic, group);
        }
        assertThat(appliedRows(topic)).isEqualTo(200);
        assertThat(duplicates(topic)).isEmpty();
        assertThat(committed(group, topic)).isEqualTo(200);
    }

    @Test
    void aKeyParallelConsumerRetriesTheRecordsThatLostTheirDatabaseAndAppliesEveryRecordOnce() throws Exception {
        String topic = newTopic("recover-parallel", 1);
        String group = newGroup("recover-parallel");
        publish(topic, 200);
        try (CuttableProxy proxy = new CuttableProxy(port(postgres.database.jdbcUrl()));
                FencedConsumer<String, String> consumer = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(config(group))
                        .fencePolicy(FencePolicy.STRICT)
                        .maxConcurrency(4)
                        .topics(topic)
                        .transactionalHandler(
                                PostgresWatermarkStore.create(through(proxy)), cuttingHandler(topic, proxy, 120))
                        .build()) {
            outageAndRecovery(consumer, proxy, topic, group);
        }
        assertThat(appliedRows(topic)).isEqualTo(200);
        assertThat(duplicates(topic)).isEmpty();
        assertThat(committed(group, topic)).isEqualTo(200);
    }

    /**
     * A plain handler in key-parallel mode keeps its watermarks in memory, loaded from and saved to the store by
     * the poll thread; the store's connection is cut while records finish above the stored offset. The poll
     * thread's next save fails; the retry drops the partition's watermarks with it and takes them again from the
     * store, so the records read again are decided as the first time: handled again (at least once), not refused
     * as stale by the watermarks they raised themselves (STRICT would refuse them).
     */
    @Test
    void aKeyParallelPlainHandlerIsNotRefusedByWatermarksItsRolledBackRecordsRaised() throws Exception {
        String topic = newTopic("recover-parallel-plain", 1);
        String group = newGroup("recover-parallel-plain");
        publish(topic, 200);
        AtomicBoolean cut = new AtomicBoolean();
        try (CuttableProxy proxy = new CuttableProxy(port(postgres.database.jdbcUrl()));
                FencedConsumer<String, String> consumer = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(config(group))
                        .fencePolicy(FencePolicy.STRICT)
                        .maxConcurrency(4)
                        .topics(topic)
                        .watermarkStore(PostgresWatermarkStore.create(through(proxy)))
                        .handler((record, token) -> {
                            if (record.value().equals("v-120") && cut.compareAndSet(false, true)) {
                                proxy.cut(); // on its first handling only: it is handled again after the retry
                            }
                            postgres.jdbi.useHandle(h -> h.execute(
                                    "INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value()));
                        })
                        .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone()
                            || (consumer.state() == ConsumerState.RETRYING && consumer.retries() >= 3));
            assertThat(stopped).isNotDone();
            long handledBeforeTheDatabaseCameBack = appliedRows(topic);
            proxy.heal();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(group, topic) == 200);
            assertThat(stopped).isNotDone();
            assertThat(appliedRows(topic)).isGreaterThan(handledBeforeTheDatabaseCameBack); // some read again
        }
        long distinct =
                postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(DISTINCT value) FROM applied WHERE topic = ?")
                        .bind(0, topic)
                        .mapTo(Long.class)
                        .one());
        assertThat(distinct).isEqualTo(200);
        assertThat(KafkaFixture.size(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX))
                .as("records refused")
                .isZero();
    }

    /** Another member of staff kills the backend of the unit's transaction (57P01) while a record is handled. */
    @Test
    void aSerialConsumerRetriesAUnitWhoseBackendWasTerminated() throws Exception {
        String topic = newTopic("recover-terminated", 1);
        String group = newGroup("recover-terminated");
        publish(topic, 200);
        PGSimpleDataSource admin = new PGSimpleDataSource();
        admin.setURL(postgres.database.jdbcUrl());
        admin.setUser(postgres.database.user());
        admin.setPassword(postgres.database.password());
        AtomicBoolean terminated = new AtomicBoolean();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config(group))
                .fencePolicy(FencePolicy.STRICT)
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    if (record.value().equals("v-120") && terminated.compareAndSet(false, true)) {
                        assertThat(PostgresBackends.terminate(
                                        admin, PostgresBackends.backendPid(handle.getConnection())))
                                .isTrue();
                    }
                    handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(group, topic) == 200);
            assertThat(stopped).isNotDone();
            assertThat(terminated).isTrue();
            assertThat(consumer.retries()).isGreaterThanOrEqualTo(1);
            assertThat(consumer.state()).isEqualTo(ConsumerState.RUNNING);
        }
        assertThat(appliedRows(topic)).isEqualTo(200);
        assertThat(duplicates(topic)).isEmpty();
    }

    /**
     * Two records of different keys lock two rows in opposite orders: PostgreSQL aborts one with a deadlock
     * (40P01). The key-parallel consumer runs it again and applies both; with retries turned off the same
     * deadlock stops it.
     */
    @Test
    void aDeadlockInKeyParallelModeIsRetriedWhileWithoutRetriesItStopsTheConsumer() throws Exception {
        String topic = newTopic("recover-deadlock", 1);
        publish(topic, 2); // v-0 (key k0) and v-1 (key k1)

        String retrying = newGroup("recover-deadlock");
        try (FencedConsumer<String, String> consumer = deadlocking(topic, retrying, Map.of())) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(retrying, topic) == 2);
            assertThat(stopped).isNotDone();
            assertThat(consumer.retries()).isGreaterThanOrEqualTo(1);
            assertThat(consumer.state()).isEqualTo(ConsumerState.RUNNING);
        }
        assertThat(appliedRows(topic)).isEqualTo(2);
        assertThat(duplicates(topic)).isEmpty();

        String failing = newGroup("recover-deadlock-off");
        try (FencedConsumer<String, String> consumer =
                deadlocking(topic, failing, Map.of(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 0))) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasMessageContaining("deadlock");
            assertThat(consumer.state()).isEqualTo(ConsumerState.FAILED);
        }
    }

    private static FencedConsumer<String, String> deadlocking(String topic, String group, Map<String, Object> extra) {
        CyclicBarrier bothLockedOne = new CyclicBarrier(2);
        Set<String> firstAttempts = ConcurrentHashMap.newKeySet();
        Map<String, Object> config = config(group);
        config.putAll(extra);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(2)
                .groupMaxRecords(1) // a transaction per record: the two run at once, each in its own
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    int first = record.value().equals("v-0") ? 1 : 2;
                    handle.execute("UPDATE lock_order SET n = n + 1 WHERE id = ?", first);
                    if (firstAttempts.add(record.value())) {
                        try {
                            bothLockedOne.await(30, TimeUnit.SECONDS); // each holds its first row now
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }
                    handle.execute("UPDATE lock_order SET n = n + 1 WHERE id = ?", 3 - first);
                    handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
                })
                .build();
    }

    @Test
    void aHandlerFailureStillStopsTheConsumerWhichTheApplicationCanRestart() throws Exception {
        String topic = newTopic("recover-handler", 1);
        String group = newGroup("recover-handler");
        publish(topic, 20);
        AtomicBoolean serviceDown = new AtomicBoolean(true);
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config(group))
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    if (record.value().equals("v-7") && serviceDown.get()) {
                        throw new IllegalStateException("pricing service down");
                    }
                    handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasRootCauseMessage("pricing service down");
            assertThat(consumer.failure()).isInstanceOf(RecordHandlingException.class);
            assertThat(consumer.retries()).isZero();
            assertThat(appliedRows(topic)).isZero(); // the unit, v-0 to v-7, was rolled back

            serviceDown.set(false);
            assertThat(consumer.state()).isEqualTo(ConsumerState.FAILED);
            CompletableFuture<Void> restarted = consumer.restart(); // new Kafka clients, from what was committed
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> restarted.isDone() || committed(group, topic) == 20);
            assertThat(restarted).isNotDone();
            assertThat(consumer.state()).isEqualTo(ConsumerState.RUNNING);
        }
        assertThat(appliedRows(topic)).isEqualTo(20);
        assertThat(duplicates(topic)).isEmpty();
    }

    @Test
    void aHandlerFailureTheApplicationNamedIsRetried() throws Exception {
        String topic = newTopic("recover-opt-in", 1);
        String group = newGroup("recover-opt-in");
        publish(topic, 20);
        AtomicBoolean failedOnce = new AtomicBoolean();
        StringDeserializer keys = new StringDeserializer();
        StringDeserializer values = new StringDeserializer();
        Map<String, Object> config = config(group);
        config.put(FencedConsumerConfig.POLICY_CONFIG, "strict");
        Jdbi jdbi = postgres.jdbi;
        TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) -> {
            handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
            if (record.value().equals("v-7") && failedOnce.compareAndSet(false, true)) {
                throw new IllegalStateException("pricing service down");
            }
        };
        FencedConsumer<String, String> consumer = FencedConsumer.builder(keys, values)
                .properties(config) // fencing.retry.* settings, if the defaults do not suit
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException) // opt in
                .transactionalHandler(PostgresWatermarkStore.create(jdbi), handler)
                .build();
        try (consumer) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(group, topic) == 20);
            assertThat(stopped).isNotDone();
            assertThat(consumer.retries()).isEqualTo(1);
        }
        assertThat(appliedRows(topic)).isEqualTo(20);
        assertThat(duplicates(topic)).isEmpty();
    }

    /**
     * A failure that keeps coming back stops the consumer once {@code fencing.retry.max.ms} has passed from the
     * first failure, although polls that bring nothing come between the attempts: the broker holds each fetch
     * (fetch.min.bytes far above the topic's bytes) longer than a poll waits, so the first poll after each
     * rewind is empty. Such a poll is no progress: the attempts used to start again there (the retry was counted
     * as recovered when a poll left nothing held, always so in serial mode), and the consumer retried for ever.
     */
    @Test
    void aFailureThatKeepsComingBackStopsTheConsumerOnceTheRetryTimeHasPassed() throws Exception {
        String topic = newTopic("recover-bounded", 1);
        String group = newGroup("recover-bounded");
        publish(topic, 20);
        Map<String, Object> config = config(group);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 1_000);
        config.put(FencedConsumerConfig.POLL_TIMEOUT_MS_CONFIG, 50);
        config.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 1_000_000);
        config.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 500);
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    if (record.value().equals("v-3")) {
                        throw new IllegalStateException("pricing service down");
                    }
                    handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThatThrownBy(() -> stopped.get(30, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasRootCauseMessage("pricing service down");
            assertThat(consumer.retries()).isPositive();
        }
        assertThat(appliedRows(topic)).isZero();
    }

    /**
     * {@code fencing.retry.max.ms} set to Long.MAX_VALUE, for a consumer that rides out whatever comes: accepted at
     * build, it must retry, not stop at the first failure it would retry (the time left was computed in
     * nanoseconds, which overflowed: the consumer stopped with an ArithmeticException).
     */
    @Test
    void aRetryTimeOfLongMaxValueRetriesForAsLongAsItTakes() throws Exception {
        String topic = newTopic("recover-forever", 1);
        String group = newGroup("recover-forever");
        publish(topic, 20);
        AtomicBoolean failedOnce = new AtomicBoolean();
        TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) -> {
            handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
            if (record.value().equals("v-7") && failedOnce.compareAndSet(false, true)) {
                throw new IllegalStateException("pricing service down");
            }
        };
        Map<String, Object> config = config(group);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, Long.toString(Long.MAX_VALUE));
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), handler)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(group, topic) == 20);
            assertThat(consumer.failure()).as("the consumer's failure").isNull();
            assertThat(stopped).isNotDone();
            assertThat(consumer.retries()).isEqualTo(1);
        }
        assertThat(appliedRows(topic)).isEqualTo(20);
        assertThat(duplicates(topic)).isEmpty();
    }

    /**
     * A value deserializer that reads its buffer as Kafka lets it (relative reads: the position moves to the end)
     * and, as a JSON or Avro reader would, refuses a value with nothing left to read. Kafka deserializes each
     * fetched record once; the key-parallel consumer deserializes a record again for each attempt (a retried
     * record, and every record of a commit group rolled back and rerun record by record), from the same fetched
     * record.
     */
    static final class ReadingDeserializer implements Deserializer<String> {
        @Override
        public String deserialize(String topic, byte[] data) {
            return data == null ? null : deserialize(topic, null, ByteBuffer.wrap(data));
        }

        @Override
        public String deserialize(String topic, Headers headers, ByteBuffer data) {
            if (data == null) {
                return null;
            }
            if (!data.hasRemaining()) {
                throw new SerializationException("no value to read");
            }
            return StandardCharsets.UTF_8.decode(data).toString();
        }
    }

    /**
     * The handler of {@code v-7} fails once, after its insert, with a failure the application named: its commit
     * group is rolled back and its records run again one by one, {@code v-7} after a back-off. Each attempt must
     * see the record as fetched: a deserializer that read the fetched buffer on the first attempt left nothing
     * for the second, which then dead-lettered valid records as unreadable (with an empty value) and counted them
     * as dealt with, so they were never applied.
     */
    @Test
    void aRecordRunAgainInKeyParallelModeIsDeserializedFromItsWholeValueAgain() throws Exception {
        runTwentyRecordsOnceWithAGroupRolledBack("recover-parallel-reread", new ReadingDeserializer(), record -> {});
    }

    /**
     * A handler that takes the fence token's header off the record it got (forwarding it downstream without the
     * consumer's own headers, say): the record it got shares its headers with the fetched one. Its commit group
     * is rolled back (the handler of {@code v-7} fails once, with a failure the application named) and its
     * records run again one by one: each must be decided by the token it was fetched with, not refused as missing
     * one because an attempt that was rolled back took the header off.
     */
    @Test
    void aRecordRunAgainInKeyParallelModeIsDecidedByTheTokenItWasFetchedWith() throws Exception {
        runTwentyRecordsOnceWithAGroupRolledBack(
                "recover-parallel-token", new StringDeserializer(), record -> record.headers()
                        .remove(FenceTokenHeader.NAME));
    }

    /**
     * A value deserializer that reads the record's content type from its headers, and a handler that takes the
     * transport headers off the record it got before forwarding it. The record it got must not share its headers
     * with the fetched one: its commit group is rolled back (the handler of {@code v-7} fails once, with a failure
     * the application named) and its records run again one by one, each deserialized from the headers it was
     * fetched with, not refused as unreadable (and dead-lettered without the header) because an attempt that was
     * rolled back took the header off.
     */
    @Test
    void aRecordRunAgainInKeyParallelModeIsDeserializedWithTheHeadersItWasFetchedWith() throws Exception {
        runTwentyRecordsOnceWithAGroupRolledBack(
                "recover-parallel-headers", new ContentTypeDeserializer(), record -> record.headers()
                        .remove(CONTENT_TYPE));
    }

    /** Reads a text value whose {@code content-type} header says {@code text/plain}; refuses any other. */
    static final class ContentTypeDeserializer implements Deserializer<String> {
        @Override
        public String deserialize(String topic, byte[] data) {
            throw new SerializationException("the content type is in the headers");
        }

        @Override
        public String deserialize(String topic, Headers headers, byte[] data) {
            Header type = headers.lastHeader(CONTENT_TYPE);
            if (type == null || !"text/plain".equals(new String(type.value(), StandardCharsets.UTF_8))) {
                throw new SerializationException("not text/plain: " + type);
            }
            return data == null ? null : new String(data, StandardCharsets.UTF_8);
        }
    }

    /**
     * 20 records through a key-parallel consumer whose handler, after {@code alsoHandle}, applies each record and
     * fails once on {@code v-7} with a failure the application named: the commit group holding it is rolled back
     * and its records run again one by one. Every record must be applied once, in offset order, none dead-lettered.
     */
    private void runTwentyRecordsOnceWithAGroupRolledBack(
            String name, Deserializer<String> valueDeserializer, Consumer<ConsumerRecord<String, String>> alsoHandle)
            throws Exception {
        String topic = newTopic(name, 1);
        String group = newGroup(name);
        publish(topic, 20);
        AtomicBoolean failedOnce = new AtomicBoolean();
        TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) -> {
            alsoHandle.accept(record);
            handle.execute("INSERT INTO applied VALUES (?, ?, ?)", topic, record.offset(), record.value());
            if (record.value().equals("v-7") && failedOnce.compareAndSet(false, true)) {
                throw new IllegalStateException("pricing service down");
            }
        };
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), valueDeserializer)
                .properties(config(group))
                .maxConcurrency(4)
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), handler)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(group, topic) == 20);
            assertThat(stopped).isNotDone();
            assertThat(failedOnce).isTrue();
        }
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT value FROM applied WHERE topic = ? ORDER BY kafka_offset")
                        .bind(0, topic)
                        .mapTo(String.class)
                        .list());
        assertThat(applied)
                .as("values applied, in offset order")
                .containsExactlyElementsOf(
                        IntStream.range(0, 20).mapToObj(i -> "v-" + i).toList());
        assertThat(KafkaFixture.size(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX))
                .as("records dead-lettered")
                .isZero();
    }
}
