package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
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

/**
 * Java values for date and time key columns that the cast to the column's type reads as another row's key than
 * the value names.
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
        // as an application binds a type Jdbi has no factory for: through the driver's setObject, untyped
        jdbi = Jdbi.create(pool).registerArgument(ObjectArgumentFactory.create(OffsetTime.class));
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

        Map<String, Throwable> refusals = new LinkedHashMap<>();
        refusals.put(
                "update",
                catchThrowable(() -> writer.tryUpdate(
                        FencedUpdate.builder(shifts)
                                .key(tenAtPlusFive)
                                .set("label", "update")
                                .build(),
                        5)));
        refusals.put(
                "upsert",
                catchThrowable(() -> writer.tryUpsert(
                        FencedUpsert.builder(shifts)
                                .key(tenAtPlusFive)
                                .value("label", "upsert")
                                .build(),
                        6)));
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

    private static List<String> shiftRows() {
        return jdbi.withHandle(h -> h.createQuery(
                        "SELECT starts || ':' || label || ':' || last_fence_token FROM shifts ORDER BY starts")
                .mapTo(String.class)
                .list());
    }
}
