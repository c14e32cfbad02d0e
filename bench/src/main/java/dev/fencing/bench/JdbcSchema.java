package dev.fencing.bench;

import org.jdbi.v3.core.Jdbi;

/** The jdbc benchmark's two tables: {@code bench_fenced} (protected) and its unprotected twin {@code bench_plain}. */
final class JdbcSchema {
    private JdbcSchema() {}

    static void create(Jdbi jdbi, int rows) {
        jdbi.useHandle(h -> {
            for (String table : new String[] {"bench_plain", "bench_fenced"}) {
                h.execute("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, counter BIGINT NOT NULL,"
                        + " payload TEXT NOT NULL)");
                h.execute(
                        "INSERT INTO " + table + " SELECT g, 0, repeat('x', 100) FROM generate_series(1, ?) AS g",
                        rows);
            }
            h.execute("DO $$ BEGIN PERFORM fencing.protect_table('bench_fenced'); END $$");
            h.execute("VACUUM ANALYZE bench_plain");
            h.execute("VACUUM ANALYZE bench_fenced");
        });
    }
}
