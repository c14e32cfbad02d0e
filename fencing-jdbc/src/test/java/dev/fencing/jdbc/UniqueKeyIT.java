package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A key names at most one row only under a unique index that compares as the library's statements do
 * ({@code column = CAST(value AS type)}), and only for a value the cast keeps as it is. A citext column under a
 * unique index with {@code text_ops} holds 'Bob' and 'bob', which its {@code =} reads as one key: a batch
 * whose 'BOB' writes both rows could make up the count of a row that was never written. These tests hold
 * the table check, the bare statement and the reporting statement to that, and show the plain statement
 * writing both rows.
 */
class UniqueKeyIT {
    static FencingDatabase db;
    static FencedWriter writer;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("unique_key_it", 2);
        db.jdbi.useHandle(h -> h.execute("CREATE EXTENSION IF NOT EXISTS citext"));
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void aTableWhoseOnlyUniqueIndexComparesOtherwiseThanItsColumnsIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names_text_ops (k citext NOT NULL, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX names_text_ops_k ON names_text_ops (k text_ops)");
            h.execute("SELECT fencing.protect_table('names_text_ops', ARRAY['k'])");
        });
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("names_text_ops")
                        .keyColumns("k")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("are not a unique key")
                .hasMessageContaining("default operator class");
    }

    @Test
    void aFloatingPointKeyColumnIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE readings (k double precision PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('readings')");
        });
        assertThatThrownBy(() ->
                        FencedTable.builder().table("readings").keyColumns("k").build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("'k'")
                .hasMessageContaining("double precision");
        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN reading AS double precision");
            h.execute("CREATE DOMAIN checked_reading AS reading CHECK (VALUE >= 0)");
            h.execute("CREATE TABLE checked_readings (k checked_reading PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('checked_readings')");
        });
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("checked_readings")
                        .keyColumns("k")
                        .build(db.jdbi))
                .as("a domain over a domain over double precision")
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("checked_reading (double precision)");
    }

    /** PostgreSQL keeps microseconds: 00:00:00.000000400 would round to the row at 00:00:00 and write it. */
    @Test
    void aTimeKeyFinerThanMicrosecondsIsRefusedNamingIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE events (k timestamptz PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('events')");
            h.execute("INSERT INTO events (k, v) VALUES ('2024-01-01T00:00:00Z', 0)");
        });
        FencedTable events =
                FencedTable.builder().table("events").keyColumns("k").build(db.jdbi);
        Instant finer = Instant.parse("2024-01-01T00:00:00.000000400Z");

        assertThatThrownBy(() -> FencedBatch.builder(events).columns("v").add(5, RowKey.of(finer), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(finer.toString())
                .hasMessageContaining("microseconds");
        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(events).key(finer).set("v", 1).build(), 5))
                .isInstanceOf(IllegalArgumentException.class);
        int v = db.jdbi.withHandle(
                h -> h.createQuery("SELECT v FROM events").mapTo(Integer.class).one());
        assertThat(v).isZero();

        List<WriteOutcome> exact = writer.tryBatch(FencedBatch.builder(events)
                .columns("v")
                .add(5, RowKey.of(Instant.parse("2024-01-01T00:00:00.000001Z")), 1)
                .build());
        assertThat(exact).containsExactly(new WriteOutcome.NotFound(5));
    }

    /**
     * The cast to the key column's type rounds: a plain {@code UPDATE ... WHERE id = CAST(? AS bigint)} given 7.5
     * writes row 8, and a {@code numeric} column given the double 0.1 + 0.2 matches the row 0.3. A floating-point
     * key, and a fractional one for a whole-number column, are refused naming them, by every kind of write.
     */
    @Test
    void aKeyTheCastWouldRoundOntoAnotherRowIsRefusedNamingIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE items (id bigint PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('items')");
            h.execute("INSERT INTO items (id, v) VALUES (7, 0), (8, 0)");
            h.execute("CREATE TABLE amounts (amount numeric PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('amounts')");
            h.execute("INSERT INTO amounts (amount, v) VALUES (0.3, 0), (0.30000000000000004, 0)");
        });
        int roundedOnto = db.jdbi.withHandle(h -> h.createUpdate(
                        "UPDATE items SET v = 1, last_fence_token = 1 WHERE id = CAST(:id AS bigint) RETURNING id")
                .bind("id", new BigDecimal("7.5"))
                .executeAndReturnGeneratedKeys("id")
                .mapTo(Integer.class)
                .one());
        assertThat(roundedOnto).as("the row a plain UPDATE for 7.5 wrote").isEqualTo(8);
        FencedTable items =
                FencedTable.builder().table("items").keyColumns("id").build(db.jdbi);
        FencedTable amounts =
                FencedTable.builder().table("amounts").keyColumns("amount").build(db.jdbi);

        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN item_id AS bigint");
            h.execute("CREATE TABLE domain_items (id item_id PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('domain_items')");
            h.execute("INSERT INTO domain_items (id, v) VALUES (7, 0), (8, 0)");
        });
        FencedTable domainItems =
                FencedTable.builder().table("domain_items").keyColumns("id").build(db.jdbi);
        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(domainItems)
                                .key(new BigDecimal("7.5"))
                                .set("v", 2)
                                .build(),
                        5))
                .as("a domain over bigint")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("7.5")
                .hasMessageContaining("bigint");

        for (Object fractional : List.of(new BigDecimal("7.5"), 7.5d, 7.6f)) {
            assertThatThrownBy(() -> writer.tryUpdate(
                            FencedUpdate.builder(items)
                                    .key(fractional)
                                    .set("v", 2)
                                    .build(),
                            5))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(String.valueOf(fractional))
                    .hasMessageContaining("bigint");
            assertThatThrownBy(() -> FencedUpsert.builder(items).key(fractional).value("v", 2))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FencedBatch.builder(items).columns("v").add(5, RowKey.of(fractional), 2))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        double sum = 0.1 + 0.2;
        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(amounts).key(sum).set("v", 2).build(), 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0.30000000000000004")
                .hasMessageContaining("floating-point");
        assertThat(db.jdbi.<Integer, RuntimeException>withHandle(h -> h.createQuery("SELECT sum(v) FROM amounts")
                        .mapTo(Integer.class)
                        .one()))
                .isZero();

        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(items)
                                .key(new BigDecimal("7.00"))
                                .set("v", 3)
                                .build(),
                        5))
                .as("a whole number written as a decimal")
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(amounts)
                                .key(new BigDecimal("0.30000000000000004"))
                                .set("v", 3)
                                .build(),
                        5))
                .isEqualTo(new WriteOutcome.Applied(5));
    }

    /**
     * A whole number for a boolean key column: PostgreSQL casts an integer to boolean as zero or not, so a plain
     * {@code UPDATE ... WHERE active = CAST(? AS boolean)} given 2 writes the row {@code true}, and a single-row
     * write keyed (1, 2) would write row (1, true) and read applied. Refused naming the value, by every kind of
     * write (a bigint has no cast to boolean at all: a batch, which sends whole numbers as bigint, failed there).
     */
    @Test
    void aWholeNumberForABooleanKeyIsRefusedNamingIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE flags (id bigint, active boolean, v int NOT NULL, PRIMARY KEY (id, active))");
            h.execute("SELECT fencing.protect_table('flags')");
            h.execute("INSERT INTO flags (id, active, v) VALUES (1, false, 0), (1, true, 0)");
        });
        int plain = db.jdbi.inTransaction(h -> {
            int written = h.createUpdate("UPDATE flags SET v = 9 WHERE id = 1 AND active = CAST(:active AS boolean)")
                    .bind("active", 2)
                    .execute();
            h.rollback();
            return written;
        });
        assertThat(plain).as("the plain statement's 2 names row true").isEqualTo(1);
        FencedTable flags =
                FencedTable.builder().table("flags").keyColumns("id", "active").build(db.jdbi);

        for (Object number : List.of(2, 2L, (short) 2)) {
            assertThatThrownBy(() -> writer.tryUpdate(
                            FencedUpdate.builder(flags)
                                    .key(1L, number)
                                    .set("v", 7)
                                    .build(),
                            5))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[1, 2]")
                    .hasMessageContaining("boolean");
            assertThatThrownBy(() -> FencedUpsert.builder(flags).key(1L, number).value("v", 7))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FencedBatch.builder(flags).columns("v").add(5, RowKey.of(1L, number), 7))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(db.jdbi.<String, RuntimeException>withHandle(h -> h.createQuery(
                                "SELECT string_agg(active || '=' || v || ':' || last_fence_token, ',' ORDER BY active)"
                                        + " FROM flags")
                        .mapTo(String.class)
                        .one()))
                .isEqualTo("false=0:0,true=0:0");
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(flags).key(1L, true).set("v", 7).build(), 5))
                .isEqualTo(new WriteOutcome.Applied(5));
    }

    /**
     * A moment (an {@code OffsetDateTime}) against a {@code timestamp without time zone} column: the single-row
     * write converts it to the session's time zone and a batch drops the offset, so one key named two rows
     * (09:00 and 10:00 for 10:00+01:00 in UTC). Refused naming it; a {@code LocalDateTime} is the key.
     */
    @Test
    void aMomentForALocalTimeKeyIsRefusedNamingIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE slots (starts timestamp PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('slots')");
            h.execute("INSERT INTO slots (starts, v) VALUES ('2024-01-01 09:00', 0), ('2024-01-01 10:00', 0)");
        });
        FencedTable slots =
                FencedTable.builder().table("slots").keyColumns("starts").build(db.jdbi);
        OffsetDateTime moment = OffsetDateTime.parse("2024-01-01T10:00+01:00");

        for (Object key : List.of(moment, moment.toZonedDateTime(), moment.toInstant())) {
            assertThatThrownBy(() -> writer.tryUpdate(
                            FencedUpdate.builder(slots).key(key).set("v", 1).build(), 5))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(key.toString())
                    .hasMessageContaining("LocalDateTime");
            assertThatThrownBy(() -> FencedBatch.builder(slots).columns("v").add(6, RowKey.of(key), 1))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE days (d date PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('days')");
        });
        FencedTable days = FencedTable.builder().table("days").keyColumns("d").build(db.jdbi);
        OffsetDateTime justAfterMidnight = OffsetDateTime.parse("2024-01-01T00:30+01:00");
        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(days)
                                .key(justAfterMidnight)
                                .set("v", 1)
                                .build(),
                        5))
                .as("a moment for a date: 2023-12-31 in UTC, 2024-01-01 where it was taken")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LocalDate");

        assertThat(writer.tryBatch(FencedBatch.builder(slots)
                        .columns("v")
                        .add(6, RowKey.of(LocalDateTime.parse("2024-01-01T10:00")), 1)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(6));
        assertThat(db.jdbi.<List<Integer>, RuntimeException>withHandle(
                        h -> h.createQuery("SELECT v FROM slots ORDER BY starts")
                                .mapTo(Integer.class)
                                .list()))
                .containsExactly(0, 1);
    }

    /**
     * The table was checked under a proper index, which was then replaced by one under {@code text_ops},
     * and 'Bob' and 'bob' went in. 'BOB' writes both rows, 'alice' none: the count is the batch's size. The
     * bare statement must not take it for every row written, and the reporting statement fails the batch,
     * undone. The plain statement writes both rows and says two rows were written.
     */
    @Test
    void anIndexReplacedAfterTheCheckByOneThatComparesOtherwiseFailsTheBatchUndone() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names_swapped (k citext NOT NULL, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX names_swapped_k ON names_swapped (k)");
            h.execute("SELECT fencing.protect_table('names_swapped', ARRAY['k'])");
        });
        FencedTable names =
                FencedTable.builder().table("names_swapped").keyColumns("k").build(db.jdbi);
        db.jdbi.useHandle(h -> {
            h.execute("DROP INDEX names_swapped_k");
            h.execute("CREATE UNIQUE INDEX names_swapped_k_text ON names_swapped (k text_ops)");
            h.execute("INSERT INTO names_swapped (k, v) VALUES ('Bob', 0), ('bob', 0), ('carol', 0)");
        });
        FencedBatch batch = FencedBatch.builder(names)
                .columns("v")
                .add(5, RowKey.of("BOB"), 1)
                .add(5, RowKey.of("alice"), 2)
                .build();

        assertThatThrownBy(() -> writer.tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
        assertThatThrownBy(() -> db.jdbi.useTransaction(h -> writer.tryBatch(h, batch)))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
        assertThat(rows()).isEqualTo("Bob=0:0,bob=0:0,carol=0:0");

        // a key not written (stale) that matches two rows fails the reporting statement the same way
        db.jdbi.useHandle(h -> h.execute("UPDATE names_swapped SET last_fence_token = 9 WHERE k = 'bob'"));
        assertThatThrownBy(() -> writer.tryBatch(FencedBatch.builder(names)
                        .columns("v")
                        .add(5, RowKey.of("BOB"), 1)
                        .add(5, RowKey.of("carol"), 3)
                        .build()))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
        assertThat(rows()).isEqualTo("Bob=0:9,bob=0:9,carol=0:0");

        int written = db.jdbi.withHandle(h -> h.execute("UPDATE names_swapped AS t SET v = s.v"
                + " FROM unnest(ARRAY['BOB', 'alice']::citext[], ARRAY[1, 2]) AS s(k, v) WHERE t.k = s.k"));
        assertThat(written)
                .as("the plain statement: 'BOB' wrote two rows, 'alice' none")
                .isEqualTo(2);
    }

    private static String rows() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(k || '=' || v || ':' || last_fence_token, ','"
                        + " ORDER BY k COLLATE \"C\") FROM names_swapped")
                .mapTo(String.class)
                .one());
    }

    @Test
    void anUpsertOnATableUniqueOnlyOnSomeOfItsKeyColumnsIsRefusedWhenBuilt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE shelf_slots (shelf INT NOT NULL, slot INT NOT NULL, item TEXT,"
                    + " PRIMARY KEY (shelf))");
            h.execute("SELECT fencing.protect_table('shelf_slots')");
            h.execute("INSERT INTO shelf_slots (shelf, slot, item) VALUES (1, 1, 'old')");
        });
        FencedTable slots = FencedTable.builder()
                .table("shelf_slots")
                .keyColumns("shelf", "slot")
                .build(db.jdbi);
        // updates need only a key that names one row
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(slots).key(1, 1).set("item", "new").build(), 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        // an upsert's ON CONFLICT (shelf, slot) needs a unique index on exactly those columns
        assertThatThrownBy(() -> FencedUpsert.builder(slots)
                        .key(1, 1)
                        .value("item", "newer")
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("public.shelf_slots")
                .hasMessageContaining("[shelf, slot]");
        db.jdbi.useHandle(h -> h.execute("CREATE UNIQUE INDEX shelf_slots_both ON shelf_slots (slot, shelf)"));
        FencedTable both = FencedTable.builder()
                .table("shelf_slots")
                .keyColumns("shelf", "slot")
                .build(db.jdbi);
        assertThat(writer.tryUpsert(
                        FencedUpsert.builder(both)
                                .key(1, 1)
                                .value("item", "newer")
                                .build(),
                        6))
                .isEqualTo(new WriteOutcome.Applied(6));
    }
}
