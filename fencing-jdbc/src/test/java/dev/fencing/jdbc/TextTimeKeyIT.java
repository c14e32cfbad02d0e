package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Text keys for date and time columns. PostgreSQL reads many spellings besides ISO 8601, some by the session's
 * settings ({@code DateStyle}, {@code TimeZone}, {@code timezone_abbreviations}) or the clock, and drops or rolls
 * over parts of others; the writer's checks of a time of day in a date, or a date in a time, found only some of
 * them. Each spelling below made a fenced update write another row than the text names where the writer's
 * sessions run (UTC, {@code DateStyle} ISO, MDY, the default abbreviations); only ISO 8601 text is taken now.
 */
class TextTimeKeyIT {
    static FencingDatabase db;
    static HikariDataSource pool;
    static Jdbi jdbi;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("text_time_key_it", 2);
        HikariConfig config = new HikariConfig();
        config.setDataSource(db.database.dataSource());
        config.setMaximumPoolSize(1);
        config.setConnectionInitSql("SET TIME ZONE 'UTC'");
        pool = new HikariDataSource(config);
        jdbi = Jdbi.create(pool);
    }

    @AfterAll
    static void dropDatabase() {
        pool.close();
        db.close();
    }

    /**
     * One spelling: a table keyed by {@code type} holding the row the text names where the writer's sessions run
     * ({@code meant}, an SQL literal, or null when it names none) and the row the cast reads it as ({@code other});
     * {@code session} is what someone else ran on the writer's pooled connection (or null).
     */
    record Spelling(String type, String session, String text, String meant, String other) {}

    static final List<Spelling> SPELLINGS = List.of(
            // read by the session's settings
            new Spelling("date", "SET DateStyle = 'ISO, DMY'", "01/02/2026", "'2026-01-02'", "'2026-02-01'"),
            new Spelling(
                    "timestamptz",
                    "SET TIME ZONE 'Asia/Tokyo'",
                    "2026-01-01 10:00",
                    "'2026-01-01 10:00+00'",
                    "'2026-01-01 10:00+09'"),
            new Spelling(
                    "timestamptz",
                    "SET timezone_abbreviations = 'India'",
                    "2026-01-01 10:00 IST",
                    "'2026-01-01 10:00+02'",
                    "'2026-01-01 10:00+05:30'"),
            new Spelling("timetz", "SET TIME ZONE 'Asia/Tokyo'", "10:00", "'10:00+00'", "'10:00+09'"),
            // read by the clock: another day after a pause over midnight
            new Spelling("date", null, "today", null, "CURRENT_DATE"),
            // parts the cast drops or rolls over
            new Spelling("timestamp", null, "2026-01-01 10:00+05", "'2026-01-01 05:00'", "'2026-01-01 10:00'"),
            new Spelling("date", null, "20260101 1000", null, "'2026-01-01'"),
            new Spelling("time", null, "J2451187 10:00", null, "'10:00'"),
            new Spelling("time", null, "2026-001", null, "'20:26'"),
            new Spelling("timestamp", null, "2026-01-01 23:59:60", null, "'2026-01-02 00:00'"));

    @Test
    void aTextKeyThatIsNotIso8601IsRefusedWhereAPlainStatementWritesAnotherRow() {
        FencedWriter writer = FencedWriter.builder(jdbi).build();
        Map<String, Throwable> refusals = new LinkedHashMap<>();
        List<String> written = new ArrayList<>();
        for (int n = 0; n < SPELLINGS.size(); n++) {
            Spelling spelling = SPELLINGS.get(n);
            String table = "spelling_" + n;
            jdbi.useHandle(h -> {
                h.execute("CREATE TABLE " + table + " (k " + spelling.type() + " PRIMARY KEY, label TEXT NOT NULL)");
                h.execute("SELECT fencing.protect_table('" + table + "')");
                h.execute("INSERT INTO " + table + " (k, label, last_fence_token) VALUES (" + spelling.other()
                        + ", 'other', 3)");
                if (spelling.meant() != null) {
                    h.execute("INSERT INTO " + table + " (k, label, last_fence_token) VALUES (" + spelling.meant()
                            + ", 'meant', 3)");
                }
            });
            FencedTable fenced =
                    FencedTable.builder().table(table).keyColumns("k").build(jdbi);
            if (spelling.session() != null) {
                jdbi.useHandle(h -> h.execute(spelling.session()));
            }

            // what the cast does to the text: a plain update of it writes the other row
            String plain = jdbi.withHandle(h -> h.createQuery("UPDATE " + table
                            + " SET label = label WHERE k = CAST(:k AS " + spelling.type() + ") RETURNING label")
                    .bind("k", spelling.text())
                    .mapTo(String.class)
                    .one());
            assertThat(plain).as("%s for %s", spelling.text(), spelling.type()).isEqualTo("other");

            refusals.put(
                    spelling.text() + " for " + spelling.type(),
                    catchThrowable(() -> writer.tryUpdate(
                            FencedUpdate.builder(fenced)
                                    .key(spelling.text())
                                    .set("label", "updated")
                                    .build(),
                            5)));
            jdbi.useHandle(h -> {
                h.execute("RESET ALL");
                h.execute("SET TIME ZONE 'UTC'");
                written.addAll(h.createQuery("SELECT CAST(:text AS text) || ' for " + spelling.type()
                                + " wrote the ' || label || ' row ' || CAST(k AS text) FROM " + table
                                + " WHERE last_fence_token = 5")
                        .bind("text", spelling.text())
                        .mapTo(String.class)
                        .list());
            });
        }

        assertThat(written).isEmpty();
        refusals.forEach((spelling, refusal) -> assertThat(refusal)
                .as(spelling)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(spelling.substring(0, spelling.lastIndexOf(" for ")))
                .hasMessageContaining("column k"));
    }

    /**
     * An interval given as text with a leading minus sign and a later field without one: by default {@code
     * '-1 day 2 hours'} is -1 day +2 hours, under {@code IntervalStyle} {@code sql_standard} -1 day -2 hours, so on
     * a connection where someone set that style an update of it wrote the other row.
     */
    @Test
    void anIntervalKeyWhoseSignsTheSessionsIntervalStyleDecidesIsRefused() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE waits (span interval PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('waits')");
            h.execute("INSERT INTO waits (span, label, last_fence_token) VALUES"
                    + " ('-1 day +2 hours', 'meant', 3), ('-1 day -2 hours', 'other', 3)");
        });
        FencedTable waits =
                FencedTable.builder().table("waits").keyColumns("span").build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();
        jdbi.useHandle(h -> h.execute("SET IntervalStyle = 'sql_standard'"));

        String plain = jdbi.withHandle(
                h -> h.createQuery("UPDATE waits SET label = label WHERE span = CAST(:k AS interval) RETURNING label")
                        .bind("k", "-1 day 2 hours")
                        .mapTo(String.class)
                        .one());
        assertThat(plain).isEqualTo("other");

        Map<String, Throwable> refusals = new LinkedHashMap<>();
        long token = 5;
        for (String ambiguous : List.of("-1 day 2 hours", " @ -1 2:00:00", "-1 day 2 hours ago")) {
            long attempt = token++;
            refusals.put(
                    ambiguous,
                    catchThrowable(() -> writer.tryUpdate(
                            FencedUpdate.builder(waits)
                                    .key(ambiguous)
                                    .set("label", "updated")
                                    .build(),
                            attempt)));
        }
        List<String> rows = jdbi.withHandle(h -> {
            h.execute("RESET ALL");
            h.execute("SET TIME ZONE 'UTC'");
            return h.createQuery("SELECT CAST(span AS text) || ':' || label || ':' || last_fence_token FROM waits"
                            + " ORDER BY span")
                    .mapTo(String.class)
                    .list();
        });
        assertThat(rows).containsExactly("-1 days -02:00:00:other:3", "-1 days +02:00:00:meant:3");
        refusals.forEach((ambiguous, refusal) -> assertThat(refusal)
                .as(ambiguous)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(ambiguous)
                .hasMessageContaining("span")
                .hasMessageContaining("IntervalStyle"));

        // every field signed, or an ISO 8601 duration, names the row whatever the style
        jdbi.useHandle(h -> h.execute("SET IntervalStyle = 'sql_standard'"));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(waits)
                                .key("-1 day +2 hours")
                                .set("label", "updated")
                                .build(),
                        10))
                .isEqualTo(new WriteOutcome.Applied(10));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(waits)
                                .key("P-1DT2H")
                                .set("label", "again")
                                .build(),
                        11))
                .isEqualTo(new WriteOutcome.Applied(11));
        jdbi.useHandle(h -> h.execute("RESET ALL"));
    }

    /**
     * An interval given as text with a fraction the cast rounds: PostgreSQL keeps whole months and microseconds, so
     * it rounds {@code '1.01 years'} (12.12 months) to 1 year and {@code '1.0000004 seconds'} to 1 second, and a
     * plain statement given either writes that row. The fenced update, upsert and batch refuse each, naming it and
     * the column; a fraction the cast keeps ({@code '0.5 years'}, {@code '1.5 seconds'}) names its row.
     */
    @Test
    void anIntervalKeyWhoseFractionTheCastRoundsIsRefused() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE rounds (span interval PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('rounds')");
            h.execute("INSERT INTO rounds (span, label, last_fence_token) VALUES ('1 year', 'year', 3),"
                    + " ('1 second', 'second', 3), ('1 mon', 'month', 3), ('6 mons', 'half', 3),"
                    + " ('1.5 seconds', 'fraction', 3)");
        });
        FencedTable rounds =
                FencedTable.builder().table("rounds").keyColumns("span").build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();

        List<String> plain = jdbi.withHandle(h -> List.of(
                h.createQuery("UPDATE rounds SET label = label WHERE span = CAST(:k AS interval) RETURNING label")
                        .bind("k", "1.01 years")
                        .mapTo(String.class)
                        .one(),
                h.createQuery("UPDATE rounds SET label = label WHERE span = CAST(:k AS interval) RETURNING label")
                        .bind("k", "1.0000004 seconds")
                        .mapTo(String.class)
                        .one()));
        assertThat(plain).containsExactly("year", "second");

        Map<String, Throwable> refusals = new LinkedHashMap<>();
        long token = 5;
        for (String rounded : List.of(
                "1.01 years",
                "P1.01Y",
                "P1.01YT1S",
                "0.101 decades",
                "1.0000004 seconds",
                "00:00:01.0000004",
                "1.0000000000001 mons",
                "1000.0004 ms",
                "1000000.4 microseconds")) {
            long updateToken = token++;
            refusals.put(
                    "update of " + rounded,
                    catchThrowable(() -> writer.tryUpdate(
                            FencedUpdate.builder(rounds)
                                    .key(rounded)
                                    .set("label", "updated")
                                    .build(),
                            updateToken)));
            long upsertToken = token++;
            refusals.put(
                    "upsert of " + rounded,
                    catchThrowable(() -> writer.tryUpsert(
                            FencedUpsert.builder(rounds)
                                    .key(rounded)
                                    .value("label", "upserted")
                                    .build(),
                            upsertToken)));
            long batchToken = token++;
            refusals.put(
                    "batch of " + rounded,
                    catchThrowable(() -> writer.tryBatch(FencedBatch.builder(rounds)
                            .columns("label")
                            .add(batchToken, RowKey.of(rounded), "batched")
                            .build())));
        }
        assertThat(roundRows())
                .containsExactly(
                        "00:00:01:second:3",
                        "00:00:01.5:fraction:3",
                        "1 mon:month:3",
                        "6 mons:half:3",
                        "1 year:year:3");
        assertThat(refusals).hasSize(27);
        refusals.forEach((write, refusal) -> assertThat(refusal)
                .as(write)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(write.substring(write.indexOf(" of ") + 4))
                .hasMessageContaining("column span")
                .hasMessageContaining("round"));

        // fractions the cast keeps name their rows
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(rounds)
                                .key("0.5 years")
                                .set("label", "updated")
                                .build(),
                        100))
                .isEqualTo(new WriteOutcome.Applied(100));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(rounds)
                                .key("1.500000 seconds")
                                .set("label", "updated")
                                .build(),
                        101))
                .isEqualTo(new WriteOutcome.Applied(101));
        assertThat(roundRows())
                .containsExactly(
                        "00:00:01:second:3",
                        "00:00:01.5:updated:101",
                        "1 mon:month:3",
                        "6 mons:updated:100",
                        "1 year:year:3");
    }

    private static List<String> roundRows() {
        return jdbi.withHandle(h -> h.createQuery(
                        "SELECT CAST(span AS text) || ':' || label || ':' || last_fence_token FROM rounds ORDER BY span")
                .mapTo(String.class)
                .list());
    }

    /** ISO 8601 text, with an offset for a column of instants and without one otherwise, still names its row. */
    @Test
    void iso8601TextNamesItsRowWhateverTheSessionsSettings() {
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE iso (d date, ts timestamp, tstz timestamptz, t time, ttz timetz,"
                    + " label TEXT NOT NULL, PRIMARY KEY (d, ts, tstz, t, ttz))");
            h.execute("SELECT fencing.protect_table('iso')");
            h.execute("INSERT INTO iso (d, ts, tstz, t, ttz, label, last_fence_token) VALUES ('2026-01-02',"
                    + " '2026-01-02 10:00', '2026-01-02 10:00+00', '10:00', '10:00+00', 'kept', 3)");
            h.execute("SET DateStyle = 'ISO, DMY'");
            h.execute("SET TIME ZONE 'Asia/Tokyo'");
        });
        FencedTable iso = FencedTable.builder()
                .table("iso")
                .keyColumns("d", "ts", "tstz", "t", "ttz")
                .build(jdbi);
        FencedWriter writer = FencedWriter.builder(jdbi).build();

        RowKey key = RowKey.of(
                " 2026-01-02 ", "2026-01-02T10:00:00", "2026-01-02 10:00:00.000000Z", "10:00:00", "10:00+00:00");
        WriteOutcome outcome = writer.tryUpdate(
                FencedUpdate.builder(iso).key(key).set("label", "updated").build(), 5);
        jdbi.useHandle(h -> h.execute("RESET ALL"));

        assertThat(outcome).isEqualTo(new WriteOutcome.Applied(5));
    }
}
