package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Key columns whose type modifier keeps fewer digits than the statements' cast ({@code numeric(5,2)}, {@code
 * timestamp(0)}): an update compares the key {@code 1.234} with the stored {@code 1.23} and finds no row, but
 * an upsert's insert assigns the key to the column, which rounds it to {@code 1.23}, and its ON CONFLICT then
 * wrote row {@code 1.23}, a row the key does not name, and reported it applied. Such a key is refused.
 */
class RoundedKeyIT {
    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("rounded_key_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE prices (amount NUMERIC(5,2) PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('prices')");
            h.execute("INSERT INTO prices (amount, label, last_fence_token) VALUES (1.23, 'stored', 3)");
            h.execute("CREATE TABLE slots (starts TIMESTAMP(0) PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('slots')");
            h.execute("INSERT INTO slots (starts, label, last_fence_token)"
                    + " VALUES ('2026-01-01 10:00:00', 'stored', 3)");
        });
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void aKeyTheNumericColumnWouldRoundIsRefusedAndNoRowIsWritten() {
        FencedTable prices =
                FencedTable.builder().table("prices").keyColumns("amount").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        BigDecimal rounded = new BigDecimal("1.234");

        assertThatThrownBy(() -> upsert(writer, prices, rounded, "upserted", 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1.234")
                .hasMessageContaining("amount");
        assertThatThrownBy(() -> FencedUpdate.builder(prices).key(rounded))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1.234");
        assertThat(rows("prices", "amount")).containsExactly("1.23:stored:3");

        // the key as the column keeps it, in any spelling, still names the row
        assertThat(upsert(writer, prices, new BigDecimal("1.230"), "upserted", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("prices", "amount")).containsExactly("1.23:upserted:5");
    }

    /** The same key given as text, as a caller reading keys from a request would give it. */
    @Test
    void aKeyGivenAsTextThatTheNumericColumnWouldRoundIsRefusedToo() {
        FencedTable fees = tableWithOneRow("fees", "amount", "NUMERIC(5,2)", "2.34");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        assertThatThrownBy(() -> upsert(writer, fees, "2.341", "upserted", 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2.341")
                .hasMessageContaining("amount");
        assertThatThrownBy(() -> FencedBatch.builder(fees).columns("label").add(5, RowKey.of(" 2.341 "), "b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2.341");
        assertThat(rows("fees", "amount")).containsExactly("2.34:kept:3");
    }

    @Test
    void aTimeKeyFinerThanTheColumnKeepsIsRefusedAndNoRowIsWritten() {
        FencedTable slots =
                FencedTable.builder().table("slots").keyColumns("starts").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        LocalDateTime rounded = LocalDateTime.of(2026, 1, 1, 10, 0, 0, 200_000_000);

        assertThatThrownBy(() -> upsert(writer, slots, rounded, "upserted", 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("10:00:00.200")
                .hasMessageContaining("starts");
        assertThat(rows("slots", "starts")).containsExactly("2026-01-01 10:00:00:stored:3");
    }

    /**
     * The time key given as text, as a caller reading keys from a request would give it: the upsert's insert
     * rounded {@code 10:00:00.4} to the stored row's {@code 10:00:00} and overwrote it, reporting Applied.
     */
    @Test
    void aTimeKeyGivenAsTextThatTheColumnWouldRoundIsRefusedAndNoRowIsWritten() {
        FencedTable shifts = tableWithOneRow("shifts", "starts", "TIMESTAMP(3)", "'2026-01-01 10:00:00.123'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        for (String rounded :
                List.of("2026-01-01 10:00:00.1234567", "2026-01-01T10:00:00.1231", "2026-01-01 10:00:00.12301+00")) {
            assertThatThrownBy(() -> upsert(writer, shifts, rounded, "upserted", 5))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(rounded)
                    .hasMessageContaining("starts");
        }
        assertThatThrownBy(() ->
                        FencedBatch.builder(shifts).columns("label").add(5, RowKey.of("2026-01-01 10:00:00.1234"), "b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2026-01-01 10:00:00.1234");
        assertThat(rows("shifts", "starts")).containsExactly("2026-01-01 10:00:00.123:kept:3");

        // the key as the column keeps it, with any trailing zeros, still names the row
        assertThat(upsert(writer, shifts, "2026-01-01 10:00:00.123000", "upserted", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("shifts", "starts")).containsExactly("2026-01-01 10:00:00.123:upserted:5");
    }

    /**
     * A time key given as text finer than the microseconds PostgreSQL keeps, for a column without a modifier:
     * the cast rounded it, and an update of {@code 10:00:00.1234567} wrote row {@code 10:00:00.123457}, where a
     * {@code LocalDateTime} of the same time is refused.
     */
    @Test
    void aTimeKeyGivenAsTextFinerThanMicrosecondsIsRefusedAndNoRowIsWritten() {
        FencedTable ticks = tableWithOneRow("ticks", "at", "TIMESTAMP", "'2026-01-01 10:00:00.123457'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        String rounded = "2026-01-01 10:00:00.1234567";

        assertThatThrownBy(() -> update(writer, ticks, rounded, "updated", 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(rounded)
                .hasMessageContaining("at");
        assertThatThrownBy(() -> FencedUpdate.builder(ticks).key(LocalDateTime.parse("2026-01-01T10:00:00.1234567")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(rows("ticks", "at")).containsExactly("2026-01-01 10:00:00.123457:kept:3");

        // six digits, or more that are zeros, name the row
        assertThat(update(writer, ticks, "2026-01-01 10:00:00.12345700", "updated", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
    }

    /**
     * A date key with a time of day: the cast to {@code date} drops the time, so an update of {@code
     * 2026-01-01T10:00} (a {@code LocalDateTime}, or text) wrote row {@code 2026-01-01}, a key no row of a
     * date column can have, and reported it applied, as a fractional number for a whole-number column would.
     */
    @Test
    void aDateKeyWithATimeOfDayIsRefusedAndNoRowIsWritten() {
        FencedTable days = tableWithOneRow("days", "day", "DATE", "'2026-01-01'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        for (Object truncated : List.<Object>of(
                LocalDateTime.of(2026, 1, 1, 10, 0),
                java.sql.Timestamp.valueOf("2026-01-01 10:00:00"),
                "2026-01-01 10:00",
                "2026-01-01T10:00:00")) {
            assertThatThrownBy(() -> update(writer, days, truncated, "updated", 5))
                    .as("key %s", truncated)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(String.valueOf(truncated))
                    .hasMessageContaining("day");
            assertThatThrownBy(() -> FencedBatch.builder(days).columns("label").add(5, RowKey.of(truncated), "b"))
                    .as("batch key %s", truncated)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(rows("days", "day")).containsExactly("2026-01-01:kept:3");

        // the date itself, or its midnight, names the row
        assertThat(update(writer, days, LocalDateTime.of(2026, 1, 1, 0, 0), "updated", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(update(writer, days, "2026-01-01", "again", 6)).isEqualTo(new WriteOutcome.Applied(6));
        assertThat(rows("days", "day")).containsExactly("2026-01-01:again:6");
    }

    /**
     * A time-of-day key with a date: the cast to {@code time} drops the date, so an update of {@code
     * 2026-01-01T10:00} wrote row {@code 10:00:00}, which every other day's 10:00 names as well.
     */
    @Test
    void aTimeOfDayKeyWithADateIsRefusedAndNoRowIsWritten() {
        FencedTable openings = tableWithOneRow("openings", "opens", "TIME", "'10:00'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        for (Object truncated :
                List.<Object>of(LocalDateTime.of(2026, 1, 1, 10, 0), "2026-01-01 10:00:00", "1/2/2026 10:00")) {
            assertThatThrownBy(() -> update(writer, openings, truncated, "updated", 5))
                    .as("key %s", truncated)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(String.valueOf(truncated))
                    .hasMessageContaining("opens");
        }
        assertThat(rows("openings", "opens")).containsExactly("10:00:00:kept:3");

        // the time of day alone names the row
        assertThat(update(writer, openings, "10:00:00", "updated", 5)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("openings", "opens")).containsExactly("10:00:00:updated:5");
    }

    /**
     * A key of a {@code name} column longer than the 63 bytes the type keeps: the cast cuts it, so an update (and
     * an upsert, and a batch) of a 70-character key wrote the row of its first 63 characters and reported it
     * applied.
     */
    @Test
    void aNameKeyLongerThanTheTypeKeepsIsRefusedAndNoRowIsWritten() {
        String kept = "a".repeat(63);
        FencedTable grantees = tableWithOneRow("grantees", "grantee", "NAME", "'" + kept + "'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        // 64 and 70 characters whose first 63 are the stored row's; 32 two-byte characters, 64 bytes
        for (String cut : List.of(kept + "b", kept + "bbbbbbb", "\u00e9".repeat(32))) {
            assertThatThrownBy(() -> update(writer, grantees, cut, "updated", 5))
                    .as("update of %s", cut)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(cut)
                    .hasMessageContaining("grantee");
            assertThatThrownBy(() -> upsert(writer, grantees, cut, "upserted", 5))
                    .as("upsert of %s", cut)
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> writer.tryBatch(FencedBatch.builder(grantees)
                            .columns("label")
                            .add(5, RowKey.of(cut), "batched")
                            .build()))
                    .as("batch of %s", cut)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(rows("grantees", "grantee")).containsExactly(kept + ":kept:3");

        // 63 bytes name the row
        assertThat(update(writer, grantees, kept, "updated", 5)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("grantees", "grantee")).containsExactly(kept + ":updated:5");
    }

    /**
     * A key of a {@code "char"} column, which keeps one byte: the cast keeps the first byte of a longer text and
     * reads an int as a byte's code, so an update of {@code 'ab'}, or of the Integer 97, wrote row {@code 'a'} and
     * reported it applied.
     */
    @Test
    void aKeyTheSingleByteCharColumnWouldCutIsRefusedAndNoRowIsWritten() {
        FencedTable grades = tableWithOneRow("grades", "grade", "\"char\"", "'a'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        // what the cast does to such a key: a plain update of 'ab' writes row 'a'
        int unfenced = db.jdbi.withHandle(
                h -> h.createUpdate("UPDATE grades SET label = label WHERE grade = CAST(:k AS \"char\")")
                        .bind("k", "ab")
                        .execute());
        assertThat(unfenced).isEqualTo(1);

        Map<Object, Throwable> refusals = new LinkedHashMap<>();
        long token = 5;
        for (Object cut : List.<Object>of("ab", 97, "\u00e9")) {
            long attempt = token++;
            refusals.put(cut, catchThrowable(() -> update(writer, grades, cut, "updated", attempt)));
        }
        assertThat(rows("grades", "grade")).containsExactly("a:kept:3");
        refusals.forEach((cut, refusal) -> assertThat(refusal)
                .as("key %s", cut)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(cut))
                .hasMessageContaining("grade"));

        // the one byte names the row
        assertThat(update(writer, grades, "a", "updated", 9)).isEqualTo(new WriteOutcome.Applied(9));
        assertThat(rows("grades", "grade")).containsExactly("a:updated:9");
    }

    /**
     * A key column of a domain over a type with a modifier ({@code numeric(5,2)}, {@code varchar(3)}): the
     * statements cast a key to the column's type, the domain, and that cast applies the modifier as an explicit
     * cast does, rounding or cutting without an error. An update (not only an upsert's insert) of {@code 1.234}
     * wrote row {@code 1.23}, and one of {@code 'abcd'} row {@code 'abc'}, and reported them applied.
     */
    @Test
    void aKeyTheModifierUnderADomainWouldCutIsRefusedAndNoRowIsWritten() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN amount2 AS NUMERIC(5,2)");
            h.execute("CREATE TABLE ledger (amount amount2 PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('ledger')");
            h.execute("INSERT INTO ledger (amount, label, last_fence_token) VALUES (1.23, 'kept', 3)");
            h.execute("CREATE DOMAIN code3 AS VARCHAR(3)");
            h.execute("CREATE DOMAIN fixed3 AS CHAR(3)");
            h.execute("CREATE TABLE codes (code code3, fixed fixed3, label TEXT NOT NULL, PRIMARY KEY (code, fixed))");
            h.execute("SELECT fencing.protect_table('codes')");
            h.execute("INSERT INTO codes (code, fixed, label, last_fence_token) VALUES ('abc', 'xyz', 'kept', 3)");
        });
        FencedTable ledger =
                FencedTable.builder().table("ledger").keyColumns("amount").build(db.jdbi);
        FencedTable codes =
                FencedTable.builder().table("codes").keyColumns("code", "fixed").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        for (Object cut : List.<Object>of(new BigDecimal("1.234"), "1.234")) {
            assertThatThrownBy(() -> update(writer, ledger, cut, "updated", 5))
                    .as("amount %s", cut)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1.234")
                    .hasMessageContaining("amount");
        }
        for (RowKey cut : List.of(RowKey.of("abcd", "xyz"), RowKey.of("abc", "xyzw"))) {
            assertThatThrownBy(() -> update(writer, codes, cut, "updated", 5))
                    .as("code %s", cut)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(cut.values().get(0).equals("abc") ? "xyzw" : "abcd");
            assertThatThrownBy(() -> FencedBatch.builder(codes).columns("label").add(5, cut, "b"))
                    .as("batch code %s", cut)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(rows("ledger", "amount")).containsExactly("1.23:kept:3");
        assertThat(rows("codes", "code")).containsExactly("abc:kept:3");

        // the key as the domain keeps it names the row (a char(n) key with its padding too)
        assertThat(update(writer, ledger, new BigDecimal("1.230"), "updated", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(update(writer, codes, RowKey.of("abc", "xyz  "), "updated", 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("ledger", "amount")).containsExactly("1.23:updated:5");
        assertThat(rows("codes", "code")).containsExactly("abc:updated:5");
    }

    /**
     * A key column of {@code varchar(n)} itself: the statements cast a key to {@code varchar} without the modifier,
     * so an update of {@code 'abc  '} (spaces past the 3 characters) finds no row, but an upsert's insert assigns
     * the key to the column, which cuts spaces past its length without an error, and its ON CONFLICT then wrote row
     * {@code 'abc'}, a row the key does not name, and reported it applied. A key longer than the column keeps is
     * refused, naming it and the column.
     */
    @Test
    void aKeyLongerThanItsVarcharColumnIsRefusedWhereAnUpsertWroteTheRowOfItsCutText() {
        FencedTable tags = tableWithOneRow("tags", "tag", "VARCHAR(3)", "'abc'");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        // what the column does to it: a plain upsert of 'abc  ' lands on row 'abc'
        String plain = db.jdbi.withHandle(h -> h.createQuery("INSERT INTO tags (tag, label) VALUES (:k, 'plain')"
                        + " ON CONFLICT (tag) DO UPDATE SET label = EXCLUDED.label RETURNING tag")
                .bind("k", "abc  ")
                .mapTo(String.class)
                .one());
        assertThat(plain).isEqualTo("abc");

        Map<String, Throwable> refusals = new LinkedHashMap<>();
        refusals.put("upsert", catchThrowable(() -> upsert(writer, tags, "abc  ", "upserted", 5)));
        refusals.put("update", catchThrowable(() -> update(writer, tags, "abc  ", "updated", 5)));
        refusals.put(
                "batch",
                catchThrowable(() -> FencedBatch.builder(tags).columns("label").add(5, RowKey.of("abc  "), "b")));
        refusals.forEach((write, refusal) -> assertThat(refusal)
                .as(write)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("abc  ")
                .hasMessageContaining("column tag")
                .hasMessageContaining("3 characters"));
        assertThat(rows("tags", "tag")).containsExactly("abc:plain:3");

        // the key as the column keeps it names the row
        assertThat(upsert(writer, tags, "abc", "upserted", 6)).isEqualTo(new WriteOutcome.Applied(6));
        assertThat(rows("tags", "tag")).containsExactly("abc:upserted:6");
    }

    /**
     * A key column of a domain over a type whose modifier cuts what the writer cannot check beforehand ({@code
     * bit(3)} reads {@code '1011'} as {@code '101'}, {@code interval day} drops hours) is refused when the table
     * is built.
     */
    @Test
    void aKeyColumnOfADomainOverAModifierTheWriterCannotCheckIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN flags3 AS BIT(3)");
            h.execute("CREATE TABLE flagged (flags flags3 PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('flagged')");
            h.execute("INSERT INTO flagged (flags, label, last_fence_token) VALUES (B'101', 'kept', 3)");
        });
        // what the cast does to a key: a plain update of '1011' wrote row '101'
        int unfenced = db.jdbi.withHandle(
                h -> h.createUpdate("UPDATE flagged SET label = 'unfenced' WHERE flags = CAST(:k AS public.flags3)")
                        .bind("k", "1011")
                        .execute());
        assertThat(unfenced).isEqualTo(1);

        assertThatThrownBy(() -> FencedTable.builder()
                        .table("flagged")
                        .keyColumns("flags")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("flags")
                .hasMessageContaining("flags3");
    }

    /**
     * A {@code money} key column: the cast to money rounds a key to the fractional digits of the session's {@code
     * lc_monetary} and reads it by that locale, so an update of {@code '1.234'} wrote row {@code 1.23} and reported
     * it applied. Refused when the table is built, a domain over money too.
     */
    @Test
    void aMoneyKeyColumnIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE tariffs (price MONEY PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('tariffs')");
            h.execute("INSERT INTO tariffs (price, label, last_fence_token) VALUES ('1.23', 'kept', 3)");
            h.execute("CREATE DOMAIN fee AS MONEY");
            h.execute("CREATE TABLE fees_in_money (price fee PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('fees_in_money')");
        });
        // what the cast does to a key: a plain update of '1.234' wrote row 1.23
        int unfenced = db.jdbi.withHandle(
                h -> h.createUpdate("UPDATE tariffs SET label = 'unfenced' WHERE price = CAST(:k AS money)")
                        .bind("k", "1.234")
                        .execute());
        assertThat(unfenced).isEqualTo(1);

        for (String table : List.of("tariffs", "fees_in_money")) {
            assertThatThrownBy(() -> FencedTable.builder()
                            .table(table)
                            .keyColumns("price")
                            .build(db.jdbi))
                    .as(table)
                    .isInstanceOf(FencedTableException.class)
                    .hasMessageContaining("price")
                    .hasMessageContaining("money")
                    .hasMessageContaining("lc_monetary");
        }
    }

    /**
     * An interval key column whose fields or precision round ({@code interval day}): an upsert's insert assigns
     * the key to the column, which rounds {@code '1 day 10:00'} to {@code '1 day'}, and its ON CONFLICT wrote row
     * {@code '1 day'} and reported it applied, where an update of that key finds no row. The writer cannot read
     * an interval as PostgreSQL does, so an upsert on such a table is refused; an update compares the key as given.
     */
    @Test
    void anUpsertOnAnIntervalKeyColumnThatRoundsIsRefusedAndNoRowIsWritten() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE waits (span INTERVAL DAY PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('waits')");
            h.execute("INSERT INTO waits (span, label, last_fence_token) VALUES ('1 day', 'kept', 3)");
            h.execute("CREATE TABLE lags (span INTERVAL DAY TO SECOND PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('lags')");
        });
        FencedTable waits =
                FencedTable.builder().table("waits").keyColumns("span").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        assertThatThrownBy(() -> upsert(writer, waits, "1 day 10:00", "upserted", 5))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("span")
                .hasMessageContaining("interval day");
        assertThat(rows("waits", "span")).containsExactly("1 day:kept:3");

        // an update compares the key as given: only the key the column keeps names the row
        assertThat(update(writer, waits, "1 day 10:00", "updated", 5)).isEqualTo(new WriteOutcome.NotFound(5));
        assertThat(update(writer, waits, "1 day", "updated", 5)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("waits", "span")).containsExactly("1 day:updated:5");

        // an interval whose fields reach seconds keeps what it is given: upserts are fine
        FencedTable lags =
                FencedTable.builder().table("lags").keyColumns("span").build(db.jdbi);
        assertThat(upsert(writer, lags, "1 day 10:00", "upserted", 5)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("lags", "span")).containsExactly("1 day 10:00:00:upserted:5");
    }

    /** Sets the row's label under {@code token}; {@code key} a {@link RowKey} or the one key column's value. */
    private static WriteOutcome update(FencedWriter writer, FencedTable table, Object key, String label, long token) {
        FencedUpdate.Builder update = FencedUpdate.builder(table);
        (key instanceof RowKey rowKey ? update.key(rowKey) : update.key(key)).set("label", label);
        return writer.tryUpdate(update.build(), token);
    }

    /** Upserts the row with its label under {@code token}; {@code key} as for {@link #update}. */
    private static WriteOutcome upsert(FencedWriter writer, FencedTable table, Object key, String label, long token) {
        FencedUpsert.Builder upsert = FencedUpsert.builder(table);
        (key instanceof RowKey rowKey ? upsert.key(rowKey) : upsert.key(key)).value("label", label);
        return writer.tryUpsert(upsert.build(), token);
    }

    /**
     * A protected table keyed by one column, with a {@code label} column and one row: key {@code keptKey} (an SQL
     * literal), label {@code kept}, token 3.
     */
    private static FencedTable tableWithOneRow(String name, String keyColumn, String keyType, String keptKey) {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + name + " (" + keyColumn + " " + keyType + " PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + name + "')");
            h.execute("INSERT INTO " + name + " (" + keyColumn + ", label, last_fence_token) VALUES (" + keptKey
                    + ", 'kept', 3)");
        });
        return FencedTable.builder().table(name).keyColumns(keyColumn).build(db.jdbi);
    }

    private static List<String> rows(String table, String key) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT " + key + " || ':' || label || ':' || last_fence_token"
                        + " FROM " + table + " ORDER BY " + key)
                .mapTo(String.class)
                .list());
    }
}
