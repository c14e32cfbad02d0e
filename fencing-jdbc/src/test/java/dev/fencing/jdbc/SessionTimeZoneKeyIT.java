package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Timestamp;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A key for a {@code timestamp with time zone} column names an instant. A local date-time ({@code LocalDateTime},
 * {@code java.sql.Timestamp}) names one only through a time zone, which the cast to {@code timestamptz} takes from
 * the session's {@code TimeZone}: on a pooled connection where someone else ran {@code SET TIME ZONE}, the same key
 * names another row than on the others. Such keys are refused.
 */
class SessionTimeZoneKeyIT {
    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("session_time_zone_key_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE slots (starts TIMESTAMPTZ PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('slots')");
            // 10:00 in UTC, which the writer means, and 10:00 in Tokyo (01:00 UTC), another slot
            h.execute("INSERT INTO slots (starts, label, last_fence_token) VALUES"
                    + " ('2026-01-01 10:00:00+00', 'meant', 3), ('2026-01-01 10:00:00+09', 'other', 3),"
                    + " ('2026-01-01 00:00:00+00', 'meant', 3), ('2026-01-01 00:00:00+09', 'other', 3)");
        });
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    /**
     * The writer's one pooled connection starts in UTC; someone else runs {@code SET TIME ZONE 'Asia/Tokyo'} on
     * it and gives it back. A plain statement given the {@code LocalDateTime} 10:00 then updates Tokyo's 10:00;
     * the fenced writes refuse that key, naming it, its column and what to give instead.
     */
    @Test
    void aLocalDateTimeKeyForATimestamptzColumnIsRefusedWhileAPlainStatementOnAnotherTimeZoneWritesAnotherRow() {
        try (HikariDataSource pool = utcPoolOfOne()) {
            Jdbi jdbi = Jdbi.create(pool);
            FencedTable slots =
                    FencedTable.builder().table("slots").keyColumns("starts").build(jdbi);
            FencedWriter writer = FencedWriter.builder(jdbi).build();
            jdbi.useHandle(h -> h.execute("SET TIME ZONE 'Asia/Tokyo'"));
            LocalDateTime ten = LocalDateTime.of(2026, 1, 1, 10, 0);

            // what the session's time zone does to such a key: a plain update of 10:00 writes Tokyo's row
            int unfenced = jdbi.withHandle(
                    h -> h.createUpdate("UPDATE slots SET label = label WHERE starts = CAST(:k AS timestamptz)"
                                    + " AND starts = '2026-01-01 01:00:00+00'")
                            .bind("k", ten)
                            .execute());
            assertThat(unfenced).isEqualTo(1);

            Map<String, Throwable> refusals = new LinkedHashMap<>();
            long token = 5;
            for (Object local : List.<Object>of(ten, ten.toLocalDate())) {
                String name = local.getClass().getSimpleName() + " " + local;
                long updateToken = token++;
                refusals.put(
                        "update of " + name,
                        catchThrowable(() -> writer.tryUpdate(
                                FencedUpdate.builder(slots)
                                        .key(local)
                                        .set("label", "update of " + name)
                                        .build(),
                                updateToken)));
                long upsertToken = token++;
                refusals.put(
                        "upsert of " + name,
                        catchThrowable(() -> writer.tryUpsert(
                                FencedUpsert.builder(slots)
                                        .key(local)
                                        .value("label", "upsert of " + name)
                                        .build(),
                                upsertToken)));
                long batchToken = token++;
                refusals.put(
                        "batch of " + name,
                        catchThrowable(() -> writer.tryBatch(FencedBatch.builder(slots)
                                .columns("label")
                                .add(batchToken, RowKey.of(local), "batch of " + name)
                                .build())));
            }
            assertThat(rows(jdbi))
                    .containsExactly(
                            "2025-12-31 15:00:00+00:other:3",
                            "2026-01-01 00:00:00+00:meant:3",
                            "2026-01-01 01:00:00+00:other:3",
                            "2026-01-01 10:00:00+00:meant:3");
            refusals.forEach((write, refusal) -> assertThat(refusal)
                    .as(write)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(write.substring(write.lastIndexOf(' ') + 1))
                    .hasMessageContaining("starts")
                    .hasMessageContaining("OffsetDateTime"));

            // the instant itself names the row the writer means, whatever the session's time zone; so does a
            // java.sql.Timestamp, which holds an instant (the driver sends it with the JVM's offset)
            assertThat(writer.tryUpdate(
                            FencedUpdate.builder(slots)
                                    .key(OffsetDateTime.of(ten, ZoneOffset.UTC))
                                    .set("label", "updated")
                                    .build(),
                            20))
                    .isEqualTo(new WriteOutcome.Applied(20));
            assertThat(writer.tryUpdate(
                            FencedUpdate.builder(slots)
                                    .key(Timestamp.from(
                                            ten.toLocalDate().atStartOfDay().toInstant(ZoneOffset.UTC)))
                                    .set("label", "updated")
                                    .build(),
                            21))
                    .isEqualTo(new WriteOutcome.Applied(21));
            assertThat(rows(jdbi))
                    .containsExactly(
                            "2025-12-31 15:00:00+00:other:3",
                            "2026-01-01 00:00:00+00:updated:21",
                            "2026-01-01 01:00:00+00:other:3",
                            "2026-01-01 10:00:00+00:updated:20");
        }
    }

    /**
     * The same for a {@code time with time zone} column: the cast of a {@code LocalTime} to it adds the session's
     * offset, so 10:00 named Tokyo's 10:00 on a connection set to Tokyo.
     */
    @Test
    void aLocalTimeKeyForATimetzColumnIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE openings (opens TIMETZ PRIMARY KEY, label TEXT NOT NULL)");
            h.execute("SELECT fencing.protect_table('openings')");
            h.execute("INSERT INTO openings (opens, label, last_fence_token) VALUES"
                    + " ('10:00:00+00', 'meant', 3), ('10:00:00+09', 'other', 3)");
        });
        try (HikariDataSource pool = utcPoolOfOne()) {
            Jdbi jdbi = Jdbi.create(pool);
            FencedTable openings =
                    FencedTable.builder().table("openings").keyColumns("opens").build(jdbi);
            FencedWriter writer = FencedWriter.builder(jdbi).build();
            jdbi.useHandle(h -> h.execute("SET TIME ZONE 'Asia/Tokyo'"));
            LocalTime ten = LocalTime.of(10, 0);

            Throwable refusal = catchThrowable(() -> writer.tryUpdate(
                    FencedUpdate.builder(openings)
                            .key(ten)
                            .set("label", "updated")
                            .build(),
                    5));
            List<String> rows = jdbi.withHandle(h -> h.createQuery(
                            "SELECT opens || ':' || label || ':' || last_fence_token FROM openings ORDER BY label")
                    .mapTo(String.class)
                    .list());
            assertThat(rows).containsExactly("10:00:00+00:meant:3", "10:00:00+09:other:3");
            assertThat(refusal)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("10:00")
                    .hasMessageContaining("opens")
                    .hasMessageContaining("OffsetTime");
        }
    }

    /** A pool of one connection whose sessions start in UTC, as the writer's do. */
    private static HikariDataSource utcPoolOfOne() {
        HikariConfig config = new HikariConfig();
        config.setDataSource(db.database.dataSource());
        config.setMaximumPoolSize(1);
        config.setConnectionInitSql("SET TIME ZONE 'UTC'");
        return new HikariDataSource(config);
    }

    private static List<String> rows(Jdbi jdbi) {
        return jdbi.withHandle(h -> {
            h.execute("SET TIME ZONE 'UTC'");
            List<String> rows = h.createQuery(
                            "SELECT starts || ':' || label || ':' || last_fence_token" + " FROM slots ORDER BY starts")
                    .mapTo(String.class)
                    .list();
            h.execute("SET TIME ZONE 'Asia/Tokyo'");
            return rows;
        });
    }
}
