package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.argument.ObjectArgumentFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PGInterval;

/**
 * Java values for date, time and interval key columns that the cast to the column's type reads as another row's
 * key than the value names: an offset the cast drops, an interval whose signs the session's settings decide.
 */
class JavaTimeKeyIT {
    static FencingDatabase db;
    static HikariDataSource pool;
    static Jdbi jdbi;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("java_time_key_it", 2);
        HikariConfig config = new HikariConfig();
        config.setDataSource(db.database.dataSource());
        config.setMaximumPoolSize(1);
        config.setConnectionInitSql("SET TIME ZONE 'UTC'");
        pool = new HikariDataSource(config);
        // as an application binds types Jdbi has no factory for: through the driver's setObject, untyped
        jdbi = Jdbi.create(pool)
                .registerArgument(ObjectArgumentFactory.create(OffsetTime.class))
                .registerArgument(ObjectArgumentFactory.create(PGInterval.class));
    }

    @AfterAll
    static void dropDatabase() {
        pool.close();
        db.close();
    }

    /**
     * An {@code OffsetTime} for a {@code time} (without time zone) column: the cast drops its offset, so 10:00+05
     * named row 10:00, where an {@code OffsetDateTime} for a {@code timestamp} column is refused. A plain
     * statement given it writes row 10:00; the fenced update, upsert and batch refuse it, naming it and the column.
     */
    @Test
    void anOffsetTimeKeyForATimeColumnIsRefusedWhereAPlainStatementWritesTheRowOfItsLocalTime() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE shifts (starts time PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('shifts')");
            h.execute("INSERT INTO shifts (starts, label, last_fence_token) VALUES ('10:00', 'ten', 3)");
        });
        FencedTable shifts =
                FencedTable.builder().table("shifts").keyColumns("starts").build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();
        OffsetTime tenAtPlusFive = OffsetTime.of(10, 0, 0, 0, ZoneOffset.ofHours(5));

        // what the cast does to it: a plain update of 10:00+05 writes row 10:00
        String plain = jdbi.withHandle(
                h -> h.createQuery("UPDATE shifts SET label = label WHERE starts = CAST(:k AS time) RETURNING label")
                        .bind("k", tenAtPlusFive)
                        .mapTo(String.class)
                        .one());
        assertThat(plain).isEqualTo("ten");

        Map<String, Throwable> refusals = updateAndUpsertRefusals(writer, shifts, tenAtPlusFive);
        refusals.put(
                "batch",
                catchThrowable(() -> writer.tryBatch(FencedBatch.builder(shifts)
                        .columns("label")
                        .add(7, RowKey.of(tenAtPlusFive), "batch")
                        .build())));
        assertThat(shiftRows()).containsExactly("10:00:00:ten:3");
        refusals.forEach((write, refusal) -> assertThat(refusal)
                .as(write)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("10:00+05:00")
                .hasMessageContaining("column starts")
                .hasMessageContaining("LocalTime"));

        // the time of day alone names its row
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(shifts)
                                .key(LocalTime.of(10, 0))
                                .set("label", "updated")
                                .build(),
                        8))
                .isEqualTo(new WriteOutcome.Applied(8));
        assertThat(shiftRows()).containsExactly("10:00:00:updated:8");
    }

    /**
     * A {@code PGInterval} goes to the server as text with a sign on its negative fields only ({@code -1 years 2
     * hours}): by default that is -1 year +2 hours, under {@code IntervalStyle} {@code sql_standard} -1 year -2
     * hours, so on a connection where someone set that style a plain statement given it writes the other row. The
     * fenced update and upsert refuse it, naming it and the column (a batch takes no {@code PGInterval}).
     */
    @Test
    void aPgIntervalKeyWhoseSignsTheSessionsIntervalStyleDecidesIsRefused() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE terms (span interval PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('terms')");
            h.execute("INSERT INTO terms (span, label, last_fence_token) VALUES"
                    + " ('-1 year +2 hours', 'meant', 3), ('-1 year -2 hours', 'other', 3)");
        });
        FencedTable terms =
                FencedTable.builder().table("terms").keyColumns("span").build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();
        PGInterval mixed = new PGInterval(-1, 0, 0, 2, 0, 0);
        jdbi.useHandle(h -> h.execute("SET IntervalStyle = 'sql_standard'"));

        String plain = jdbi.withHandle(
                h -> h.createQuery("UPDATE terms SET label = label WHERE span = CAST(:k AS interval) RETURNING label")
                        .bind("k", mixed)
                        .mapTo(String.class)
                        .one());
        assertThat(plain).isEqualTo("other");

        Map<String, Throwable> refusals = updateAndUpsertRefusals(writer, terms, mixed);
        assertThat(termRows()).containsExactly("-1 years -02:00:00:other:3", "-1 years +02:00:00:meant:3");
        refusals.forEach((write, refusal) -> assertThat(refusal)
                .as(write)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(mixed.getValue())
                .hasMessageContaining("column span")
                .hasMessageContaining("IntervalStyle"));

        // an interval whose fields' signs no style changes names its row: every nonzero field negative, or the
        // later fields with a sign of their own
        jdbi.useHandle(h -> h.execute("SET IntervalStyle = 'sql_standard'"));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(terms)
                                .key(new PGInterval(-1, 0, 0, -2, 0, 0))
                                .set("label", "updated")
                                .build(),
                        10))
                .isEqualTo(new WriteOutcome.Applied(10));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(terms)
                                .key(new PGInterval(-1, 0, -1, 2, 0, 0))
                                .set("label", "absent")
                                .build(),
                        11))
                .isEqualTo(new WriteOutcome.NotFound(11));
        assertThat(termRows()).containsExactly("-1 years -02:00:00:updated:10", "-1 years +02:00:00:meant:3");
    }

    /**
     * A {@code LocalDate} or {@code LocalDateTime} outside the years 1 to 9999: the driver sends a single-row
     * write's key in its own spelling (year 0 as {@code 0001-01-01 BC}, -44 as {@code 0045-03-15 BC}, a date
     * before 4713 BC as {@code -infinity}), and a batch sends Java's ({@code 0000-01-01}, {@code -0044-03-15},
     * {@code +10000-01-01}), which PostgreSQL refuses; so an update named row 1 BC where a batch of the same key
     * failed, and a date of 5000 BC named row -infinity. The fenced update, upsert and batch refuse such a key,
     * naming it and the column; a plain statement given it writes the driver's row.
     */
    @Test
    void aDateKeyOutsideTheYearsOneTo9999IsRefusedWhereAPlainStatementWritesTheDriversRow() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE eras (day date PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('eras')");
            h.execute("INSERT INTO eras (day, label, last_fence_token) VALUES ('0001-01-01 BC', 'one bc', 3),"
                    + " ('0045-03-15 BC', 'ides', 3), ('-infinity', 'before', 3), ('10000-01-01', 'far', 3)");
            h.execute("CREATE TABLE era_moments (at timestamp PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('era_moments')");
            h.execute("INSERT INTO era_moments (at, label, last_fence_token) VALUES"
                    + " ('0001-01-01 10:00 BC', 'one bc', 3)");
        });
        FencedTable eras = FencedTable.builder().table("eras").keyColumns("day").build(jdbi);
        FencedTable moments =
                FencedTable.builder().table("era_moments").keyColumns("at").build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();

        // what the driver does with them: a plain update of -44-03-15 writes row 45 BC, of 5000 BC row -infinity
        String ides = jdbi.withHandle(
                h -> h.createQuery("UPDATE eras SET label = label WHERE day = CAST(:k AS date) RETURNING label")
                        .bind("k", LocalDate.of(-44, 3, 15))
                        .mapTo(String.class)
                        .one());
        assertThat(ides).isEqualTo("ides");
        String before = jdbi.withHandle(
                h -> h.createQuery("UPDATE eras SET label = label WHERE day = CAST(:k AS date) RETURNING label")
                        .bind("k", LocalDate.of(-5000, 1, 1))
                        .mapTo(String.class)
                        .one());
        assertThat(before).isEqualTo("before");

        Map<String, Object> keys = new LinkedHashMap<>();
        keys.put("0000-01-01", LocalDate.of(0, 1, 1));
        keys.put("-0044-03-15", LocalDate.of(-44, 3, 15));
        keys.put("-5000-01-01", LocalDate.of(-5000, 1, 1));
        keys.put("+10000-01-01", LocalDate.of(10000, 1, 1));
        keys.put("0000-01-01T10:00", LocalDateTime.of(0, 1, 1, 10, 0));
        keys.forEach((spelled, key) -> {
            FencedTable table = key instanceof LocalDate ? eras : moments;
            Map<String, Throwable> refusals = updateAndUpsertRefusals(writer, table, key);
            refusals.put(
                    "batch",
                    catchThrowable(() -> writer.tryBatch(FencedBatch.builder(table)
                            .columns("label")
                            .add(7, RowKey.of(key), "batch")
                            .build())));
            refusals.forEach((write, refusal) -> assertThat(refusal)
                    .as(write + " of " + spelled)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(spelled)
                    .hasMessageContaining("column " + table.keyColumns().get(0))
                    .hasMessageContaining("years 1 to 9999"));
        });
        List<String> rows = jdbi.withHandle(h -> h.createQuery("SELECT label || ':' || last_fence_token FROM eras"
                        + " UNION ALL SELECT label || ':' || last_fence_token FROM era_moments")
                .mapTo(String.class)
                .list());
        assertThat(rows).containsOnly("one bc:3", "ides:3", "before:3", "far:3");

        // a date of the years 1 to 9999 names its row, in the batch as in the update
        jdbi.useHandle(
                h -> h.execute("INSERT INTO eras (day, label, last_fence_token) VALUES ('0001-01-01', 'one', 3)"));
        assertThat(writer.tryBatch(FencedBatch.builder(eras)
                        .columns("label")
                        .add(8, RowKey.of(LocalDate.of(1, 1, 1)), "batch")
                        .build()))
                .containsExactly(new WriteOutcome.Applied(8));
    }

    /** What a fenced update (token 5) and a fenced upsert (token 6) of {@code label} under {@code key} threw. */
    private static Map<String, Throwable> updateAndUpsertRefusals(FencedWriter writer, FencedTable table, Object key) {
        Map<String, Throwable> refusals = new LinkedHashMap<>();
        refusals.put(
                "update",
                catchThrowable(() -> writer.tryUpdate(
                        FencedUpdate.builder(table)
                                .key(key)
                                .set("label", "update")
                                .build(),
                        5)));
        refusals.put(
                "upsert",
                catchThrowable(() -> writer.tryUpsert(
                        FencedUpsert.builder(table)
                                .key(key)
                                .value("label", "upsert")
                                .build(),
                        6)));
        return refusals;
    }

    private static List<String> shiftRows() {
        return jdbi.withHandle(h -> h.createQuery(
                        "SELECT starts || ':' || label || ':' || last_fence_token FROM shifts ORDER BY starts")
                .mapTo(String.class)
                .list());
    }

    private static List<String> termRows() {
        return jdbi.withHandle(h -> {
            h.execute("RESET ALL");
            h.execute("SET TIME ZONE 'UTC'");
            return h.createQuery("SELECT CAST(span AS text) || ':' || label || ':' || last_fence_token FROM terms"
                            + " ORDER BY span")
                    .mapTo(String.class)
                    .list();
        });
    }
}
