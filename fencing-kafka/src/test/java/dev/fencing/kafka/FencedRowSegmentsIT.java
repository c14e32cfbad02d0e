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
 * {@link FencedRowHandler}'s two ways to write a segment of a unit's row updates give the same answers: a segment
 * of 20 rows is written as single-row updates, a segment of 40 as one batch statement (or, where that statement
 * cannot answer as the single-row updates would, undone and written as they are). The same records, written both
 * ways, must leave the same rows, dead letters and consumer state.
 */
class FencedRowSegmentsIT {
    private static final int SINGLE_ROWS = 20;
    private static final int BATCH = 40;
    private static PostgresFixture postgres;
    /** Another session, on connections of its own. */
    private static Jdbi outside;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rows_segments_it");
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
     * Strings into text columns, whole numbers, booleans and UUIDs travel in a batch as they bind: the segment of
     * 40 is one statement
     * and stores what the single-row updates store.
     */
    @Test
    void valuesThatTravelAsTheyBindAreWrittenInOneStatementAndStoredAlike() {
        UUID id = UUID.fromString("0F8FAD5B-D9CB-469F-A165-70867728950E");
        Function<Integer, Outcome> times = n -> run(
                n,
                1,
                "label TEXT, note VARCHAR, amount NUMERIC, whole BIGINT, small INTEGER, ratio FLOAT8, flag BOOLEAN,"
                        + " flag_text TEXT, id UUID, id_text TEXT, code CHARACTER(3)",
                "",
                record -> new Object[] {"a,\"b\" {x} \\ NULL", null, 12L, 7, (short) 3, 9L, true, false, id, id, "ab"},
                "label || '|' || coalesce(note, '<null>') || '|' || amount || '|' || whole || '|' || small || '|'"
                        + " || ratio || '|' || flag || '|' || flag_text || '|' || id || '|' || id_text || '|'"
                        + " || code || '.' || '@' || last_fence_token",
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
                "code");

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
            int pid = await().atMost(Duration.ofSeconds(60)).until(FencedRowSegmentsIT::waitingUpdate, p -> p != 0);
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

    /** A protected table {@code (id BIGINT PRIMARY KEY, label TEXT)} with rows 0 to n-1 at {@code token}. */
    private static FencedTable numbered(int n, long token) {
        String table = "numbered_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, label TEXT)");
            h.execute("INSERT INTO " + table + " (id) SELECT g FROM generate_series(0, " + (n - 1) + ") g");
            h.execute("SELECT fencing.protect_table('" + table + "')");
            h.execute("UPDATE " + table + " SET last_fence_token = " + token);
        });
        return FencedTable.builder().table(table).keyColumns("id").build(postgres.jdbi);
    }

    /** Runs a label-writing consumer over the topic until every offset is stored or it failed. */
    private static Outcome runLabels(FencedTable table, String topic, long records, String select) {
        String group = newGroup("rounds-labels");
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns("label")
                .values(record -> new Object[] {record.value()})
                .build();
        String failure = null;
        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows, "monotonic")) {
            consumer.start();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> consumer.state() == ConsumerState.FAILED
                            || store.loadOffset(group, new TopicPartition(topic, 0)) == records);
            if (consumer.state() == ConsumerState.FAILED) {
                failure = String.valueOf(consumer.failure());
            }
        }
        String row = postgres.jdbi.withHandle(h -> h.createQuery("SELECT " + select + " FROM " + table.quotedName())
                .mapTo(String.class)
                .one());
        return new Outcome(row, KafkaFixture.size(topic + ".dlt"), failure);
    }

    /**
     * Two spellings of one row's key ({@code "7"} and {@code "07"} for a {@code bigint} key) name the same row: its
     * writes reach it in the order of their records, whichever way they are written. Three passes over the rows
     * under one token: "k" first, "k" second, "0k" third; each row ends with "third". (The second and third
     * passes make one segment of twice the rows, 40 or 80, which the batch statement refuses as keys given
     * twice: undone, it is written row by row. The first pass is single-row updates for 20 rows, a batch for 40.)
     */
    @ParameterizedTest
    @ValueSource(ints = {SINGLE_ROWS, BATCH})
    void twoSpellingsOfOneRowsKeyAreWrittenInRecordOrder(int n) {
        FencedTable table = numbered(n, 0);
        String topic = newTopic("rounds-spellings", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int k = 0; k < n; k++) {
                sendFenced(producer, topic, String.valueOf(k), "first", 10);
            }
            for (int k = 0; k < n; k++) {
                sendFenced(producer, topic, String.valueOf(k), "second", 10);
            }
            for (int k = 0; k < n; k++) {
                sendFenced(producer, topic, "0" + k, "third", 10);
            }
        }

        Outcome outcome = runLabels(
                table,
                topic,
                3L * n,
                "count(*) || ' ' || min(label) || ' ' || max(label) || '@' || min(last_fence_token)");

        assertThat(outcome).isEqualTo(new Outcome(n + " third third@10", 0, null));
    }

    /**
     * A record keyed in another spelling of its row's key ({@code "07"}) whose row holds a newer token is stale:
     * the row's token is read under the key as the record spells it (it was read under the row's own spelling,
     * and the consumer failed), and the consumer's fence refuses the record.
     */
    @ParameterizedTest
    @ValueSource(ints = {SINGLE_ROWS, BATCH})
    void aStaleRecordWhoseKeyIsSpelledOtherwiseIsDeadLettered(int n) {
        FencedTable table = numbered(n, 20);
        String topic = newTopic("rounds-spelled-stale", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int k = 0; k < n; k++) {
                sendFenced(producer, topic, String.valueOf(k), "stale", 10);
                sendFenced(producer, topic, "0" + k, "stale", 10);
            }
        }

        Outcome outcome = runLabels(table, topic, 2L * n, "count(*) || ' ' || count(label)");

        assertThat(outcome).isEqualTo(new Outcome(n + " 0", 2L * n, null));
    }

    /** Record keys in upper case for a {@code uuid} key column whose rows hold a token: each row takes its record. */
    @ParameterizedTest
    @ValueSource(ints = {SINGLE_ROWS, BATCH})
    void upperCaseUuidKeysNameTheirRows(int n) {
        String name = "uuids_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + name + " (id UUID PRIMARY KEY, label TEXT)");
            h.execute("INSERT INTO " + name + " (id) SELECT gen_random_uuid() FROM generate_series(1, " + n + ")");
            h.execute("SELECT fencing.protect_table('" + name + "')");
            h.execute("UPDATE " + name + " SET last_fence_token = 5");
        });
        FencedTable table = FencedTable.builder().table(name).keyColumns("id").build(postgres.jdbi);
        String topic = newTopic("rounds-uuids", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String id : postgres.jdbi.withHandle(h -> h.createQuery("SELECT id::text FROM " + name)
                    .mapTo(String.class)
                    .list())) {
                sendFenced(producer, topic, id.toUpperCase(java.util.Locale.ROOT), "fresh", 10);
            }
        }

        Outcome outcome = runLabels(table, topic, n, "count(*) || ' ' || min(label) || '@' || min(last_fence_token)");

        assertThat(outcome).isEqualTo(new Outcome(n + " fresh@10", 0, null));
    }

    /**
     * A unit ends after the poll in which it reached {@link FencedRowUnits#MAX_SEGMENTS} segments: one hot row's
     * records are spread over several transactions, none holding more than that many updates of the row but for
     * one poll's records.
     */
    @Test
    void aUnitEndsOnceItHoldsTheMostSegments() {
        FencedTable table = audited(1);
        String topic = newTopic("rounds-hot", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 1; i <= 200; i++) {
                sendFenced(producer, topic, "k00", String.valueOf(i), i);
            }
        }

        consumeQuantities(table, topic, 10, 200);

        String perTransaction = postgres.jdbi.withHandle(h -> h.createQuery("SELECT sum(n) || ' ' || max(n) FROM"
                        + " (SELECT count(*) AS n FROM " + table.name() + "_audit GROUP BY tx) AS t")
                .mapTo(String.class)
                .one());
        assertThat(perTransaction).startsWith("200 ");
        assertThat(Integer.parseInt(perTransaction.substring(4))).isLessThanOrEqualTo(FencedRowUnits.MAX_SEGMENTS + 9);
    }

    /**
     * One poll that brings many segments (100 passes over 40 rows) still sets at most {@link
     * FencedRowUnits#MAX_SEGMENTS} savepoints in its unit: past them, segments are written row by row. Every
     * record is applied all the same.
     */
    @Test
    void aUnitSetsAtMostTheMostSegmentsSavepointsHoweverManyAPollBrings() {
        FencedTable table = audited(40);
        String topic = newTopic("rounds-savepoints", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int pass = 1; pass <= 100; pass++) {
                for (int k = 0; k < 40; k++) {
                    producer.send(FencedRecords.create(topic, String.format("k%02d", k), String.valueOf(pass), pass));
                }
            }
            producer.flush();
        }

        consumeQuantities(table, topic, 4000, 4000);

        // the batch statements (many rows each) of each transaction
        int mostBatches = postgres.jdbi.withHandle(h -> h.createQuery("SELECT max(n) FROM (SELECT tx, count(*) AS n"
                        + " FROM (SELECT tx, stmt FROM " + table.name() + "_audit GROUP BY tx, stmt"
                        + " HAVING count(*) >= " + FencedRowUnits.MIN_STATEMENT_ROWS + ") AS b GROUP BY tx) AS t")
                .mapTo(Integer.class)
                .one());
        assertThat(mostBatches).isBetween(1, FencedRowUnits.MAX_SEGMENTS);
        String rowsNow = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) || ' ' || min(quantity) || '@'"
                        + " || min(last_fence_token) FROM " + table.quotedName())
                .mapTo(String.class)
                .one());
        assertThat(rowsNow).isEqualTo("40 100@100");
    }

    /**
     * {@link #table} of {@code n} rows with {@code quantity BIGINT}, whose every update is recorded in {@code
     * <table>_audit} with its transaction and its statement's start.
     */
    private static FencedTable audited(int n) {
        FencedTable table = table(n, "quantity BIGINT", "");
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table.name() + "_audit (tx BIGINT, stmt TIMESTAMPTZ)");
            h.execute("CREATE FUNCTION " + table.name() + "_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " INSERT INTO " + table.name() + "_audit VALUES (txid_current(), statement_timestamp());"
                    + " RETURN NULL; END $$");
            h.execute("CREATE TRIGGER audit AFTER UPDATE ON " + table.quotedName() + " FOR EACH ROW EXECUTE FUNCTION "
                    + table.name() + "_audit()");
        });
        return table;
    }

    /** Sets each record's row's quantity to its value, polling {@code maxPoll} records, until all are stored. */
    private static void consumeQuantities(FencedTable table, String topic, int maxPoll, long records) {
        String group = newGroup("rounds-quantities");
        Map<String, Object> config = consumerConfig(group);
        config.put(org.apache.kafka.clients.consumer.ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .build();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .fencedRowHandler(PostgresWatermarkStore.create(postgres.jdbi), rows)
                .build()) {
            consumer.start();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> store.loadOffset(group, new TopicPartition(topic, 0)) == records);
        }
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
