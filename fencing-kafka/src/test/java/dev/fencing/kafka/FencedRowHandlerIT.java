package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.internal.FencedRowUnits;
import dev.fencing.kafka.spi.PartitionProgress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link FencedRowHandler} against a real broker and PostgreSQL: the row of a protected table is the key's
 * watermark; a row that refuses a record's update makes the record stale.
 */
class FencedRowHandlerIT {
    private static PostgresFixture postgres;
    /** Another writer of the same rows, on connections of its own (not the consumer's unit). */
    private static Jdbi outside;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rows_it");
        outside = Jdbi.create(postgres.database.jdbcUrl(), postgres.database.user(), postgres.database.password());
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /** A protected table {@code (sku TEXT PRIMARY KEY, quantity BIGINT)} with rows a and b at quantity 0, token 0. */
    private static FencedTable stockTable() {
        String table = "stock_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("INSERT INTO " + table + " VALUES ('a', 0), ('b', 0)");
            h.execute("SELECT fencing.protect_table('" + table + "')");
        });
        return FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi);
    }

    private static String row(FencedTable table, String sku) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT quantity || '@' || last_fence_token FROM " + table.quotedName() + " WHERE sku = :sku")
                .bind("sku", sku)
                .mapTo(String.class)
                .one());
    }

    private static long storedWatermarkRows(String group) {
        return postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT count(*) FROM fencing.kafka_watermark WHERE consumer_group = :g")
                        .bind("g", group)
                        .mapTo(Long.class)
                        .one());
    }

    private static FencedConsumer<String, String> consumer(
            String group, String topic, FencedRowHandler<String, String> rows) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .fencedRowHandler(PostgresWatermarkStore.create(postgres.jdbi), rows)
                .build();
    }

    private static void runUntilStored(
            FencedConsumer<String, String> consumer, String group, String topic, long offset) {
        consumer.start();
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        await().atMost(Duration.ofSeconds(60))
                .until(() -> store.loadOffset(group, new TopicPartition(topic, 0)) == offset);
    }

    @Test
    void aRowAnotherWriterFencedMeanwhileRefusesItsRecordsWhichAreDeadLetteredAndCommittedOnce() {
        // given records a@5, b@5, a@6, and another writer that fences row a with token 7 while the consumer's
        // unit holds a@5 (after the consumer read the row's token, before the unit's updates are sent)
        FencedTable stock = stockTable();
        String topic = newTopic("rows", 1);
        String group = newGroup("rows");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, topic, "a", "10", 5);
            sendFenced(producer, topic, "b", "20", 5);
            sendFenced(producer, topic, "a", "30", 6);
        }
        AtomicBoolean fencedMeanwhile = new AtomicBoolean();
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stock)
                .columns("quantity")
                .values(record -> {
                    if (record.value().equals("10") && fencedMeanwhile.compareAndSet(false, true)) {
                        outside.useHandle(h -> h.execute("UPDATE " + stock.quotedName()
                                + " SET quantity = 99, last_fence_token = 7 WHERE sku = 'a' AND last_fence_token < 7"));
                    }
                    return new Object[] {Long.parseLong(record.value())};
                })
                .build();

        // when
        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
            runUntilStored(consumer, group, topic, 3);
        }

        // then: a's records were refused by its row and dead-lettered; b's applied; no watermark row written
        assertThat(fencedMeanwhile).isTrue();
        assertThat(row(stock, "a")).isEqualTo("99@7");
        assertThat(row(stock, "b")).isEqualTo("20@5");
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 2);
        assertThat(deadLetters).hasSize(2);
        assertThat(deadLetters)
                .extracting(r -> header(r, DeadLetterHeaders.ORIGIN_OFFSET) + " " + header(r, DeadLetterHeaders.REASON))
                .containsExactly("0 STALE_TOKEN", "2 STALE_TOKEN");
        assertThat(storedWatermarkRows(group)).isZero();

        // when the group goes on after a restart with one more record
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, topic, "b", "40", 8);
        }
        try (FencedConsumer<String, String> restarted = consumer(group, topic, rows)) {
            runUntilStored(restarted, group, topic, 4);
        }

        // then: the refused records' offsets were committed with their unit: neither applied nor dead-lettered again
        assertThat(row(stock, "b")).isEqualTo("40@8");
        assertThat(row(stock, "a")).isEqualTo("99@7");
        assertThat(KafkaFixture.size(topic + ".dlt")).isEqualTo(2);
    }

    /**
     * From an adversarial review: the values function gets the record's headers themselves and may change them
     * (take the consumer's own headers off, say). A record its row refuses is still refused as stale, under the
     * token it was fetched with, and dead-lettered; before, its refusal read the header again and failed the
     * consumer on a header no longer there. Its dead letter carries the record's headers as fetched, not as the
     * values function left them (the token header it took off back, a header it added absent).
     */
    @Test
    void aRecordWhoseHeaderTheValuesFunctionRemovedIsStillRefusedByItsRowUnderItsFetchedToken() {
        FencedTable stock = stockTable();
        String topic = newTopic("rows-headerless", 1);
        String group = newGroup("rows-headerless");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, topic, "a", "10", 5);
        }
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stock)
                .columns("quantity")
                .values(record -> {
                    record.headers().remove(FenceTokenHeader.NAME);
                    record.headers().add("forwarded-to", "billing".getBytes(StandardCharsets.UTF_8));
                    // another writer fences the row after the consumer read its token
                    outside.useHandle(h -> h.execute("UPDATE " + stock.quotedName()
                            + " SET quantity = 99, last_fence_token = 7 WHERE sku = 'a' AND last_fence_token < 7"));
                    return new Object[] {Long.parseLong(record.value())};
                })
                .build();

        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
            consumer.start();
            PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> consumer.state() == ConsumerState.FAILED
                            || store.loadOffset(group, new TopicPartition(topic, 0)) == 1);
            assertThat(consumer.failure()).as("the consumer's failure").isNull();
        }

        assertThat(row(stock, "a")).isEqualTo("99@7");
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
        assertThat(deadLetters)
                .extracting(r -> header(r, DeadLetterHeaders.REASON) + ": " + header(r, DeadLetterHeaders.DETAIL))
                .singleElement()
                .asString()
                .startsWith("STALE_TOKEN: token 5 is older than watermark 7");
        assertThat(recordHeaders(deadLetters.get(0)))
                .as("the dead letter's headers other than its own")
                .containsExactly(FenceTokenHeader.NAME + "=" + Arrays.toString(FenceTokenHeader.encode(5)));
    }

    /** The record's headers, without those the dead letter added, as name=bytes. */
    private static List<String> recordHeaders(ConsumerRecord<?, ?> deadLetter) {
        List<String> headers = new ArrayList<>();
        for (Header h : deadLetter.headers()) {
            if (!h.key().startsWith("fencing-dlt-")) {
                headers.add(h.key() + "=" + Arrays.toString(h.value()));
            }
        }
        return headers;
    }

    /** A protected table {@code (sku TEXT PRIMARY KEY, quantity BIGINT)} with rows k00 to k39 at 0, token 0. */
    private static FencedTable fortyRows() {
        String table = "forty_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL, note BYTEA)");
            h.execute("INSERT INTO " + table + " SELECT 'k' || lpad(g::text, 2, '0'), 0 FROM generate_series(0, 39) g");
            h.execute("SELECT fencing.protect_table('" + table + "')");
        });
        return FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi);
    }

    /**
     * A unit's writes in segments that name each row once (here each pass over the 40 rows), each one fenced batch
     * statement: a row another writer fenced after the consumer read it refuses the record's update in that
     * statement, the record is dead-lettered, and a later round's write to the same row (a newer token) still
     * applies; each row ends with its last record's value.
     */
    @Test
    void aUnitsRowsAreWrittenASegmentAStatementAndARowFencedMeanwhileRefusesInIt() {
        // given three records a row for 40 rows (tokens 10, 20, 30), all in one unit
        FencedTable forty = fortyRows();
        String topic = newTopic("rows-rounds", 1);
        String group = newGroup("rows-rounds");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int round = 1; round <= 3; round++) {
                for (int k = 0; k < 40; k++) {
                    sendFenced(
                            producer, topic, String.format("k%02d", k), String.valueOf(100 * round + k), 10L * round);
                }
            }
        }
        // and another writer that fences rows k05 and k06 at 25 and k07 at 99 once the consumer has judged every
        // record (the handler sees the last one), before the unit's statements run
        AtomicInteger handed = new AtomicInteger();
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(forty)
                .columns("quantity")
                .values(record -> {
                    if (handed.incrementAndGet() == 120) {
                        outside.useHandle(h -> {
                            h.execute("UPDATE " + forty.quotedName()
                                    + " SET quantity = -1, last_fence_token = 25 WHERE sku IN ('k05', 'k06')");
                            h.execute("UPDATE " + forty.quotedName()
                                    + " SET quantity = -2, last_fence_token = 99 WHERE sku = 'k07'");
                        });
                    }
                    return new Object[] {Long.parseLong(record.value())};
                })
                .build();
        long statementsBefore = FencedRowUnits.batchStatementsForTest();

        // when
        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
            runUntilStored(consumer, group, topic, 120);
        }

        // then: three segments, a statement each
        assertThat(handed).hasValue(120);
        assertThat(FencedRowUnits.batchStatementsForTest() - statementsBefore).isEqualTo(3);
        // rows k05 and k06 refused tokens 10 and 20 and took 30; k07 refused all three; the rest took all three
        assertThat(row(forty, "k05")).isEqualTo("305@30");
        assertThat(row(forty, "k06")).isEqualTo("306@30");
        assertThat(row(forty, "k07")).isEqualTo("-2@99");
        assertThat(row(forty, "k00")).isEqualTo("300@30");
        assertThat(row(forty, "k39")).isEqualTo("339@30");
        assertThat(readAll(topic + ".dlt", 7))
                .extracting(r -> header(r, DeadLetterHeaders.ORIGIN_OFFSET) + " " + header(r, DeadLetterHeaders.REASON))
                .containsExactly(
                        "5 STALE_TOKEN",
                        "6 STALE_TOKEN",
                        "7 STALE_TOKEN",
                        "45 STALE_TOKEN",
                        "46 STALE_TOKEN",
                        "47 STALE_TOKEN",
                        "87 STALE_TOKEN");
        assertThat(storedWatermarkRows(group)).isZero();
    }

    /**
     * A value a batch statement cannot carry as text (a {@code byte[]} for a {@code bytea} column): the round is
     * written as single-row updates, which bind it as JDBC does, and every row gets it.
     */
    @Test
    void aSegmentWithAValueABatchCannotCarryIsWrittenRowByRow() {
        FencedTable forty = fortyRows();
        String topic = newTopic("rows-bytes", 1);
        String group = newGroup("rows-bytes");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int k = 0; k < 40; k++) {
                sendFenced(producer, topic, String.format("k%02d", k), "note " + k, 10);
            }
        }
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(forty)
                .columns("note")
                .values(record -> new Object[] {record.value().getBytes(StandardCharsets.UTF_8)})
                .build();
        long statementsBefore = FencedRowUnits.batchStatementsForTest();

        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
            runUntilStored(consumer, group, topic, 40);
        }

        assertThat(FencedRowUnits.batchStatementsForTest() - statementsBefore).isZero();
        String notes = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) || ' ' || min(last_fence_token)"
                        + " || ' ' || max(convert_from(note, 'UTF8')) FROM " + forty.quotedName()
                        + " WHERE note = convert_to('note ' || CAST(substr(sku, 2) AS int), 'UTF8')")
                .mapTo(String.class)
                .one());
        assertThat(notes).isEqualTo("40 10 note 9");
    }

    @Test
    void aKeysWatermarkIsTheGreaterOfItsRowsTokenAndItsStoredWatermark() {
        // given row a fenced at 7 by another writer, and a watermark of 9 stored for key b (row b at 0)
        FencedTable stock = stockTable();
        String topic = newTopic("rows-load", 1);
        String group = newGroup("rows-load");
        outside.useHandle(h -> h.execute("UPDATE " + stock.quotedName() + " SET last_fence_token = 7 WHERE sku = 'a'"));
        PostgresWatermarkStore.create(postgres.jdbi)
                .commit(
                        group,
                        h -> List.of(new PartitionProgress(
                                new TopicPartition(topic, 0),
                                -1,
                                0,
                                Map.of(org.apache.kafka.common.utils.Bytes.wrap("b".getBytes()), 9L))));
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, topic, "a", "1", 6);
            sendFenced(producer, topic, "b", "2", 8);
            sendFenced(producer, topic, "a", "3", 8);
            sendFenced(producer, topic, "b", "4", 10);
        }
        AtomicInteger handed = new AtomicInteger();
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stock)
                .columns("quantity")
                .values(record -> {
                    handed.incrementAndGet();
                    return new Object[] {Long.parseLong(record.value())};
                })
                .build();

        // when
        try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
            runUntilStored(consumer, group, topic, 4);
        }

        // then: a@6 (below a's row) and b@8 (below b's stored watermark) never reached the handler
        assertThat(handed).hasValue(2);
        assertThat(row(stock, "a")).isEqualTo("3@8");
        assertThat(row(stock, "b")).isEqualTo("4@10");
        assertThat(readAll(topic + ".dlt", 2))
                .extracting(r -> header(r, DeadLetterHeaders.ORIGIN_OFFSET) + " " + header(r, DeadLetterHeaders.REASON))
                .containsExactly("0 STALE_TOKEN", "1 STALE_TOKEN");
    }

    /**
     * An {@code =} on varchar, case-insensitive, defined in {@code public} (an exact match on the search path,
     * so an unqualified {@code sku = CAST(? AS varchar)} takes it over pg_catalog's text {@code =}, which the
     * primary key compares with): the record of key 'a' updates row 'a' only, not also row 'A', which the
     * key lets in beside it. The plain statement writes both rows.
     */
    @Test
    void aRecordUpdatesTheRowItsKeyNamesUnderThePrimaryKeysEquality() {
        String table = "cased_" + UUID.randomUUID().toString().substring(0, 8);
        String function = "ci_eq_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku VARCHAR PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("INSERT INTO " + table + " VALUES ('A', 0), ('a', 0)");
            h.execute("SELECT fencing.protect_table('" + table + "')");
            h.execute("CREATE FUNCTION public." + function + "(varchar, varchar) RETURNS boolean LANGUAGE sql"
                    + " IMMUTABLE AS 'SELECT lower($1) = lower($2)'");
            h.execute("CREATE OPERATOR public.= (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public." + function
                    + ")");
        });
        try {
            FencedTable cased =
                    FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi);
            String topic = newTopic("rows-cased", 1);
            String group = newGroup("rows-cased");
            try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
                sendFenced(producer, topic, "a", "10", 5);
            }
            FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(cased)
                    .columns("quantity")
                    .values(record -> new Object[] {Long.parseLong(record.value())})
                    .build();

            try (FencedConsumer<String, String> consumer = consumer(group, topic, rows)) {
                runUntilStored(consumer, group, topic, 1);
            }

            String rowsNow = postgres.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(sku || '=' || quantity"
                            + " || '@' || last_fence_token, ',' ORDER BY sku COLLATE \"C\") FROM " + table)
                    .mapTo(String.class)
                    .one());
            assertThat(rowsNow).isEqualTo("A=0@0,a=10@5");
            int plain = postgres.jdbi.inTransaction(h -> {
                int written = h.execute("UPDATE " + table + " SET quantity = 1 WHERE sku = CAST('a' AS varchar)");
                h.rollback();
                return written;
            });
            assertThat(plain).as("the plain statement's = names both rows").isEqualTo(2);
        } finally {
            postgres.jdbi.useHandle(h -> h.execute("DROP OPERATOR public.= (varchar, varchar)"));
        }
    }

    /**
     * From an adversarial review of fencing-jdbc's casts: the consumer's sessions run with a search path that puts
     * a schema with a type named {@code text} (a domain over {@code varchar(1)}) before pg_catalog, so that
     * {@code CAST('bob' AS text)} reads 'b' there. The handler's statements name the key's type with its schema,
     * so the record for 'bob' under token 5 meets 'bob''s token 9 and is refused, and row 'b' is not written.
     */
    @Test
    void aRecordNamesItsOwnRowOnASessionWhoseSearchPathShadowsTheKeysType() {
        String table = "shadowed_" + UUID.randomUUID().toString().substring(0, 8);
        String schema = "shadow_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + table + "')");
            h.execute("INSERT INTO " + table + " (sku, quantity, last_fence_token) VALUES ('b', 0, 0), ('bob', 0, 9)");
            h.execute("CREATE SCHEMA " + schema);
            h.execute("CREATE DOMAIN " + schema + ".text AS pg_catalog.varchar(1)");
        });
        FencedTable shadowed =
                FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi);
        String url = postgres.database.jdbcUrl();
        Jdbi shadowedSessions = Jdbi.create(
                url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema + ",pg_catalog,public",
                postgres.database.user(),
                postgres.database.password());
        String castOnThem = shadowedSessions.withHandle(h ->
                h.createQuery("SELECT CAST('bob' AS text)").mapTo(String.class).one());
        assertThat(castOnThem)
                .as("the consumer's sessions read text as the shadowing domain")
                .isEqualTo("b");
        String topic = newTopic("rows-shadowed", 1);
        String group = newGroup("rows-shadowed");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, topic, "bob", "10", 5);
        }
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(shadowed)
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .build();

        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .staleRecords(StaleRecordPolicy.DROP)
                .fencedRowHandler(PostgresWatermarkStore.create(shadowedSessions), rows)
                .build()) {
            runUntilStored(consumer, group, topic, 1);
        }

        String rowsNow = postgres.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(sku || '=' || quantity"
                        + " || '@' || last_fence_token, ',' ORDER BY sku COLLATE \"C\") FROM " + table)
                .mapTo(String.class)
                .one());
        assertThat(rowsNow).isEqualTo("b=0@0,bob=0@9");
    }

    /**
     * From an adversarial review: the key column types the handler takes are text, varchar, bigint, integer,
     * smallint and uuid; a {@code varchar[]} key (whose type name merely begins with "character varying") is
     * refused at build like any other, naming its type.
     */
    @Test
    void aRowKeyWhoseTextAndBoundValueCanNameDifferentRowsIsRefusedNamingIt() {
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stockTable())
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .rowKey(key -> Double.valueOf(1000))
                .build();

        assertThatThrownBy(() -> rows.rowKey("a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("gave 1000.0 (java.lang.Double) for key a");
        FencedRowHandler<String, String> byNumber = FencedRowHandler.<String, String>builder(stockTable())
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .rowKey(key -> Long.valueOf(1000))
                .build();
        assertThat(byNumber.rowKey("a")).isEqualTo(1000L);
    }

    @Test
    void refusesAVarcharArrayKeyColumnAtBuild() {
        String arrayKey = "array_key_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + arrayKey + " (sku VARCHAR[] PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + arrayKey + "')");
        });
        FencedTable arrays =
                FencedTable.builder().table(arrayKey).keyColumns("sku").build(postgres.jdbi);

        assertThatThrownBy(() -> FencedRowHandler.<String, String>builder(arrays)
                        .columns("quantity")
                        .values(r -> new Object[] {1})
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("character varying[]");
    }

    @Test
    void refusesAtBuildWhatItCannotFenceNamingIt() {
        String plain = "plain_" + UUID.randomUUID().toString().substring(0, 8);
        String twoKeys = "two_keys_" + UUID.randomUUID().toString().substring(0, 8);
        String numericKey = "numeric_key_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + plain + " (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL,"
                    + " last_fence_token BIGINT NOT NULL DEFAULT 0)");
            h.execute("CREATE TABLE " + twoKeys + " (tenant TEXT, sku TEXT, quantity BIGINT NOT NULL,"
                    + " PRIMARY KEY (tenant, sku))");
            h.execute("SELECT fencing.protect_table('" + twoKeys + "')");
            h.execute("CREATE TABLE " + numericKey + " (id NUMERIC PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + numericKey + "')");
        });

        FencedTable unguarded =
                FencedTable.builder().table(plain).keyColumns("sku").build(postgres.jdbi);
        assertThatThrownBy(() -> FencedRowHandler.<String, String>builder(unguarded)
                        .columns("quantity")
                        .values(r -> new Object[] {1})
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("public." + plain)
                .hasMessageContaining("fencing.protect_table");
        FencedTable composite =
                FencedTable.builder().table(twoKeys).keyColumns("tenant", "sku").build(postgres.jdbi);
        assertThatThrownBy(() -> FencedRowHandler.<String, String>builder(composite)
                        .columns("quantity")
                        .values(r -> new Object[] {1})
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[tenant, sku]");
        FencedTable numeric =
                FencedTable.builder().table(numericKey).keyColumns("id").build(postgres.jdbi);
        assertThatThrownBy(() -> FencedRowHandler.<String, String>builder(numeric)
                        .columns("quantity")
                        .values(r -> new Object[] {1})
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("numeric");
        FencedTable stock = stockTable();
        assertThatThrownBy(() -> FencedRowHandler.<String, String>builder(stock).columns("last_fence_token"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("last_fence_token");

        // and the key-parallel consumer, which has no unit to send the rows' updates in
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stock)
                .columns("quantity")
                .values(r -> new Object[] {1})
                .build();
        assertThatThrownBy(() -> FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                        .properties(consumerConfig(newGroup("rows-parallel")))
                        .topics("any")
                        .maxConcurrency(2)
                        .fencedRowHandler(PostgresWatermarkStore.create(postgres.jdbi), rows)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("fencedRowHandler")
                .hasMessageContaining("maxConcurrency");
    }
}
