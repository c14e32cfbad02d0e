package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.internal.FencedRowUnits;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link FencedRowHandler}'s two ways to write a round of a unit's row updates give the same answers: a round of
 * 20 rows is written as single-row updates, a round of 40 as one batch statement (or, where that statement cannot
 * answer as the single-row updates would, undone and written as they are). The same records, written both
 * ways, must leave the same rows, dead letters and consumer state.
 */
class FencedRowRoundsIT {
    private static final int SINGLE_ROWS = 20;
    private static final int BATCH = 40;
    private static PostgresFixture postgres;
    /** Another session, on connections of its own. */
    private static Jdbi outside;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rows_rounds_it");
        outside = Jdbi.create(postgres.database.jdbcUrl(), postgres.database.user(), postgres.database.password());
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /** A protected table {@code (sku TEXT PRIMARY KEY, <columns>)} with rows k00 to k(n-1), token 0. */
    private static FencedTable table(int n, String columns, String extraDdl) {
        String table = "rounds_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, " + columns + ")");
            h.execute("INSERT INTO " + table + " (sku) SELECT 'k' || lpad(g::text, 2, '0') FROM generate_series(0, "
                    + (n - 1) + ") g");
            h.execute("SELECT fencing.protect_table('" + table + "')");
            if (!extraDdl.isEmpty()) {
                h.execute(extraDdl.replace("TABLE_NAME", table));
            }
        });
        return FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi);
    }

    /** {@code times} records a row for rows k00 to k(n-1), all under token 10, value k. */
    private static String topicOf(int n, int times) {
        String topic = newTopic("rounds", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int t = 0; t < times; t++) {
                for (int k = 0; k < n; k++) {
                    sendFenced(producer, topic, String.format("k%02d", k), String.valueOf(k), 10);
                }
            }
        }
        return topic;
    }

    private static FencedConsumer<String, String> consumer(
            String group, String topic, FencedRowHandler<String, String> rows, String policy) {
        Map<String, Object> config = consumerConfig(group);
        config.put(FencedConsumerConfig.POLICY_CONFIG, policy);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .fencedRowHandler(PostgresWatermarkStore.create(postgres.jdbi), rows)
                .build();
    }

    /** What a run left: row k00 as {@code select} shows it, the dead letters, or the consumer's failure. */
    private record Outcome(String row, long deadLetters, String failure) {}

    /**
     * Writes {@code times} records a row to {@code n} rows and waits until every offset is stored or the consumer
     * failed.
     */
    private static Outcome run(
            int n,
            int times,
            String columns,
            String extraDdl,
            Function<ConsumerRecord<String, String>, Object[]> values,
            String select,
            String... columnNames) {
        FencedTable table = table(n, columns, extraDdl);
        String topic = topicOf(n, times);
        String group = newGroup("rounds");
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns(columnNames)
                .values(values)
                .build();
        String failure = null;
        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows, "monotonic")) {
            consumer.start();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> consumer.state() == ConsumerState.FAILED
                            || store.loadOffset(group, new TopicPartition(topic, 0)) == (long) n * times);
            if (consumer.state() == ConsumerState.FAILED) {
                Throwable cause = consumer.failure();
                while (cause.getCause() != null) {
                    cause = cause.getCause();
                }
                failure = cause.getClass().getSimpleName();
            }
        }
        String row = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT " + select + " FROM " + table.quotedName() + " WHERE sku = 'k00'")
                        .mapTo(String.class)
                        .one());
        return new Outcome(row, KafkaFixture.size(topic + ".dlt"), failure);
    }

    /**
     * Values whose text form and bound form differ (an offset a {@code timestamp} drops from text, floating-point
     * numbers) are never sent in a batch: both round sizes store them as the single-row update binds them.
     */
    @Test
    void valuesThatABatchWouldStoreOtherwiseAreWrittenRowByRow() {
        long before = FencedRowUnits.batchStatementsForTest();
        Function<Integer, Outcome> times = n -> run(
                n,
                1,
                "ts TIMESTAMP, amount NUMERIC, ratio FLOAT8",
                "",
                record -> new Object[] {OffsetDateTime.parse("2024-01-01T10:00:00+05:00"), 0.1 + 0.2, 0.1f},
                "ts || ' | ' || amount || ' | ' || ratio || '@' || last_fence_token",
                "ts",
                "amount",
                "ratio");

        Outcome single = times.apply(SINGLE_ROWS);
        Outcome batch = times.apply(BATCH);

        assertThat(single.failure()).isNull();
        assertThat(single.row()).startsWith("2024-01-01 05:00:00 | ").endsWith("@10");
        assertThat(batch).isEqualTo(single);
        assertThat(FencedRowUnits.batchStatementsForTest() - before).isZero();
    }

    /**
     * Strings, whole numbers, booleans and UUIDs travel in a batch as they bind: the round of 40 is one statement
     * and stores what the single-row updates store.
     */
    @Test
    void valuesThatTravelAsTheyBindAreWrittenInOneStatementAndStoredAlike() {
        UUID id = UUID.fromString("0F8FAD5B-D9CB-469F-A165-70867728950E");
        Function<Integer, Outcome> times = n -> run(
                n,
                1,
                "label TEXT, note VARCHAR, amount NUMERIC, whole BIGINT, small INTEGER, ratio FLOAT8, flag BOOLEAN,"
                        + " flag_text TEXT, id UUID, id_text TEXT, later TIMESTAMPTZ",
                "",
                record -> new Object[] {
                    "a,\"b\" {x} \\ NULL", null, 12L, 7, (short) 3, 9L, true, false, id, id, "2024-01-01T10:00:00+05:00"
                },
                "label || '|' || coalesce(note, '<null>') || '|' || amount || '|' || whole || '|' || small || '|'"
                        + " || ratio || '|' || flag || '|' || flag_text || '|' || id || '|' || id_text || '|'"
                        + " || extract(epoch FROM later) || '@' || last_fence_token",
                "label",
                "note",
                "amount",
                "whole",
                "small",
                "ratio",
                "flag",
                "flag_text",
                "id",
                "id_text",
                "later");

        long before = FencedRowUnits.batchStatementsForTest();
        Outcome single = times.apply(SINGLE_ROWS);
        assertThat(FencedRowUnits.batchStatementsForTest() - before).isZero();
        Outcome batch = times.apply(BATCH);

        assertThat(FencedRowUnits.batchStatementsForTest() - before).isEqualTo(1);
        assertThat(single.failure()).isNull();
        assertThat(single.row()).startsWith("a,\"b\" {x} \\ NULL|<null>|12|7|3|9|true|false|");
        assertThat(batch).isEqualTo(single);
    }

    /**
     * A trigger that skips an update the row admitted (PostgreSQL's {@code suppress_redundant_updates_trigger}, a
     * second identical update under the same token): the single-row update counts nothing, and the record is
     * refused as stale. The batch statement cannot answer for such a row; it is undone and the round written row
     * by row, with the same answer.
     */
    @Test
    void aRowWhoseTriggerSkipsTheUpdateAnswersAsRowByRow() {
        Function<Integer, Outcome> times = n -> run(
                n,
                2,
                "quantity BIGINT",
                "CREATE TRIGGER z_redundant BEFORE UPDATE ON TABLE_NAME FOR EACH ROW"
                        + " EXECUTE FUNCTION suppress_redundant_updates_trigger()",
                record -> new Object[] {Long.parseLong(record.value())},
                "quantity || '@' || last_fence_token",
                "quantity");

        Outcome single = times.apply(SINGLE_ROWS);
        Outcome batch = times.apply(BATCH);

        assertThat(single).isEqualTo(new Outcome("0@10", SINGLE_ROWS, null));
        assertThat(batch).isEqualTo(new Outcome("0@10", BATCH, null));
    }

    /**
     * The consumer's policy decides in the statement: two records a row under one token, the second one written
     * under {@code monotonic} and refused (dead-lettered) under {@code strict}, in both ways of writing.
     */
    @ParameterizedTest
    @CsvSource({"monotonic,20", "monotonic,40", "strict,20", "strict,40"})
    void theConsumersPolicyDecidesInTheStatement(String policy, int n) {
        FencedTable table = table(n, "quantity BIGINT", "");
        String topic = newTopic("rounds-policy", 1);
        String group = newGroup("rounds-policy");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int round = 1; round <= 2; round++) {
                for (int k = 0; k < n; k++) {
                    sendFenced(producer, topic, String.format("k%02d", k), String.valueOf(round), 10);
                }
            }
        }
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .build();

        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows, policy)) {
            consumer.start();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> store.loadOffset(group, new TopicPartition(topic, 0)) == 2L * n);
        }

        String k00 = postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT quantity || '@' || last_fence_token FROM " + table.quotedName() + " WHERE sku = 'k00'")
                .mapTo(String.class)
                .one());
        long deadLetters = KafkaFixture.size(topic + ".dlt");
        if (policy.equals("strict")) {
            assertThat(k00).isEqualTo("1@10");
            assertThat(deadLetters).isEqualTo(n);
        } else {
            assertThat(k00).isEqualTo("2@10");
            assertThat(deadLetters).isZero();
        }
    }

    /**
     * The unit's connection is terminated while its row updates run (a transient failure): the unit is retried
     * and every record applied, in both ways of writing; the consumer never stops.
     */
    @ParameterizedTest
    @ValueSource(ints = {SINGLE_ROWS, BATCH})
    void aConnectionLostWhileTheRowUpdatesRunIsRetried(int n) {
        FencedTable table = table(n, "quantity BIGINT", "");
        String topic = topicOf(n, 1);
        String group = newGroup("rounds-transient");
        String last = String.format("k%02d", n - 1);
        AtomicInteger handed = new AtomicInteger();
        AtomicReference<Handle> locker = new AtomicReference<>();
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns("quantity")
                .values(record -> {
                    if (handed.incrementAndGet() == n) {
                        // another session locks the last row: the unit's update of it waits
                        Handle h = outside.open();
                        h.begin();
                        h.createQuery("SELECT 1 FROM " + table.quotedName() + " WHERE sku = :s FOR UPDATE")
                                .bind("s", last)
                                .mapTo(Integer.class)
                                .one();
                        locker.set(h);
                    }
                    return new Object[] {Long.parseLong(record.value())};
                })
                .build();

        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows, "monotonic")) {
            consumer.start();
            int pid = await().atMost(Duration.ofSeconds(60)).until(FencedRowRoundsIT::waitingUpdate, p -> p != 0);
            outside.useHandle(h -> h.execute("SELECT pg_terminate_backend(" + pid + ")"));
            locker.get().rollback();
            locker.get().close();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> consumer.state() == ConsumerState.FAILED
                            || store.loadOffset(group, new TopicPartition(topic, 0)) == n);

            assertThat(consumer.failure()).isNull();
            assertThat(consumer.state()).isEqualTo(ConsumerState.RUNNING);
        }
        String rowsNow = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) || ' ' || min(last_fence_token)"
                        + " FROM " + table.quotedName() + " WHERE quantity = CAST(substr(sku, 2) AS int)")
                .mapTo(String.class)
                .one());
        assertThat(rowsNow).isEqualTo(n + " 10");
    }

    /** The pid of a backend of this database whose row update waits on a row lock, or 0. */
    private static int waitingUpdate() {
        return outside.withHandle(h -> h.createQuery("SELECT coalesce(max(pid), 0) FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                        + " AND pid <> pg_backend_pid() AND (query LIKE 'UPDATE%' OR query LIKE 'WITH applied%')")
                .mapTo(Integer.class)
                .one());
    }
}
