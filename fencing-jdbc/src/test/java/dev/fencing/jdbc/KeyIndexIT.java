package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlLogger;
import org.jdbi.v3.core.statement.StatementContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bare batch statement trusts its update count only under the unique index the writer found by the
 * full check, which the statement confirms by the index's OID and what the check read. Here the index is
 * found by a first batch and then changed under the writer: the next batch must not take a count made up
 * by a key that names two rows for every row written. Each test also shows the plain statement writing
 * two rows for that key.
 */
class KeyIndexIT {
    static FencingDatabase db;
    static FencedWriter writer;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("key_index_it", 2);
        db.jdbi.useHandle(h -> h.execute("CREATE EXTENSION IF NOT EXISTS citext"));
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void anIndexReplacedAfterABatchFoundItByOneThatComparesOtherwiseFailsTheNextBatchUndone() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names_replaced (k citext NOT NULL, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX names_replaced_k ON names_replaced (k)");
            h.execute("SELECT fencing.protect_table('names_replaced', ARRAY['k'])");
            h.execute("INSERT INTO names_replaced (k, v) VALUES ('Bob', 0), ('carol', 0)");
        });
        FencedTable names = foundByABatch(writer, db.jdbi, "names_replaced", "carol");
        db.jdbi.useHandle(h -> {
            h.execute("DROP INDEX names_replaced_k");
            h.execute("CREATE UNIQUE INDEX names_replaced_k_text ON names_replaced (k text_ops)");
            h.execute("INSERT INTO names_replaced (k, v) VALUES ('bob', 0)");
        });
        FencedBatch batch = twoKeys(names, "BOB", "alice");

        assertFailsUndone(() -> writer.tryBatch(batch));
        assertFailsUndone(() -> writer.batch(batch));
        assertThat(rows("names_replaced", "k")).isEqualTo("Bob=0:0,bob=0:0,carol=1:3");
        assertThat(plainWrites("names_replaced", "k", "citext"))
                .as("the plain statement: 'BOB' wrote two rows, 'alice' none")
                .isEqualTo(2);
    }

    @Test
    void keyColumnsRenamedAfterABatchFoundTheIndexFailTheNextBatchUndone() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names_renamed (k text PRIMARY KEY, j text NOT NULL, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('names_renamed')");
            h.execute("INSERT INTO names_renamed (k, j, v) VALUES ('a', 'x', 0), ('b', 'x', 0)");
        });
        FencedTable names = foundByABatch(writer, db.jdbi, "names_renamed", "a");
        // the primary key stays on the column now named k_old; k is now a column with 'x' twice
        db.jdbi.useHandle(h -> {
            h.execute("ALTER TABLE names_renamed RENAME COLUMN k TO k_old");
            h.execute("ALTER TABLE names_renamed RENAME COLUMN j TO k");
        });
        FencedBatch batch = twoKeys(names, "x", "absent");

        assertFailsUndone(() -> writer.tryBatch(batch));
        assertThat(rows("names_renamed", "k_old")).isEqualTo("a=1:3,b=0:0");
        assertThat(plainWrites("names_renamed", "k", "text"))
                .as("the plain statement: 'x' wrote two rows, 'absent' none")
                .isEqualTo(2);
    }

    /**
     * A varchar column's index compares with text's class, which the check accepts only while varchar has no
     * default class of its own. Here one is created after a batch found the index, case-insensitive, with
     * its operators where an unqualified {@code =} finds them ({@code public}, on the search path): under it
     * 'BOB' names both 'Bob' and 'bob', which the old index let in side by side. The index no longer stands
     * as found, so the bare statement writes nothing; the statements go on comparing with the {@code =} the
     * table was checked with (text's, named with its schema), under which 'BOB' names no row.
     */
    @Test
    void aDefaultOperatorClassCreatedAfterABatchFoundTheIndexChangesNotWhichRowsAKeyNames() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names_varchar (k varchar NOT NULL, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX names_varchar_k ON names_varchar (k)");
            h.execute("SELECT fencing.protect_table('names_varchar', ARRAY['k'])");
            h.execute("INSERT INTO names_varchar (k, v) VALUES ('Bob', 0), ('carol', 0)");
        });
        FencedTable names = foundByABatch(writer, db.jdbi, "names_varchar", "carol");
        db.jdbi.useHandle(h -> {
            for (String[] op : new String[][] {{"lt", "<"}, {"le", "<="}, {"eq", "="}, {"ge", ">="}, {"gt", ">"}}) {
                h.execute("CREATE FUNCTION ci_" + op[0] + "(varchar, varchar) RETURNS boolean LANGUAGE sql"
                        + " IMMUTABLE AS 'SELECT lower($1) " + op[1] + " lower($2)'");
                h.execute("CREATE OPERATOR public." + op[1] + " (LEFTARG = varchar, RIGHTARG = varchar,"
                        + " FUNCTION = ci_" + op[0] + ")");
            }
            h.execute("CREATE FUNCTION ci_cmp(varchar, varchar) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT"
                    + " CASE WHEN lower($1) < lower($2) THEN -1 WHEN lower($1) > lower($2) THEN 1 ELSE 0 END'");
            h.execute("CREATE OPERATOR CLASS ci_ops DEFAULT FOR TYPE varchar USING btree AS"
                    + " OPERATOR 1 public.< (varchar, varchar), OPERATOR 2 public.<= (varchar, varchar),"
                    + " OPERATOR 3 public.= (varchar, varchar), OPERATOR 4 public.>= (varchar, varchar),"
                    + " OPERATOR 5 public.> (varchar, varchar), FUNCTION 1 ci_cmp(varchar, varchar)");
            h.execute("INSERT INTO names_varchar (k, v) VALUES ('bob', 0)");
        });
        try {
            FencedBatch batch = twoKeys(names, "BOB", "alice");
            assertThat(writer.tryBatch(batch))
                    .containsExactly(new WriteOutcome.NotFound(5), new WriteOutcome.NotFound(5));
            assertThat(rows("names_varchar", "k")).isEqualTo("Bob=0:0,bob=0:0,carol=1:3");
            int written = db.jdbi.withHandle(h -> h.execute("UPDATE names_varchar AS t SET v = s.v FROM"
                    + " unnest(CAST(ARRAY['BOB', 'alice'] AS varchar[]), ARRAY[1, 2]) AS s(k, v)"
                    + " WHERE t.k = s.k"));
            assertThat(written).as("'BOB' under the new class: two rows").isEqualTo(2);
        } finally {
            db.jdbi.useHandle(h -> {
                h.execute("DROP OPERATOR CLASS ci_ops USING btree");
                for (String op : new String[] {"<", "<=", "=", ">=", ">"}) {
                    h.execute("DROP OPERATOR public." + op + " (varchar, varchar)");
                }
            });
        }
    }

    /**
     * A key column altered after the table was built: the statements still cast to the type it had. Here
     * timestamptz became timestamp in a session whose time zone skips an hour in spring, so 02:30 and
     * 03:30 that night are one instant: a batch that compares as timestamptz writes both rows for one key.
     */
    @Test
    void aKeyColumnAlteredSinceTheTableWasBuiltIsNotTrusted() {
        HikariConfig config = new HikariConfig();
        config.setDataSource(db.database.dataSource());
        config.setMaximumPoolSize(1);
        config.setConnectionInitSql("SET TIME ZONE 'America/New_York'");
        try (HikariDataSource newYork = new HikariDataSource(config)) {
            Jdbi jdbi = Jdbi.create(newYork);
            FencedWriter inNewYork = FencedWriter.builder(jdbi).build();
            jdbi.useHandle(h -> {
                h.execute("CREATE TABLE moments (k timestamptz PRIMARY KEY, v int NOT NULL)");
                h.execute("SELECT fencing.protect_table('moments')");
                h.execute("INSERT INTO moments (k, v) VALUES ('2024-01-01 00:00:00+00', 0)");
            });
            FencedTable moments = foundByABatch(inNewYork, jdbi, "moments", "2024-01-01 00:00:00+00");
            jdbi.useHandle(h -> {
                h.execute("ALTER TABLE moments ALTER COLUMN k TYPE timestamp");
                h.execute("INSERT INTO moments (k, v) VALUES ('2024-03-10 02:30', 0), ('2024-03-10 03:30', 0)");
            });
            FencedBatch batch = twoKeys(moments, "2024-03-10 07:30:00+00", "2030-01-01 00:00:00+00");

            // the first batch after the change, and the next, after the writer looked the index up again
            assertFailsUndone(() -> inNewYork.tryBatch(batch));
            assertFailsUndone(() -> inNewYork.tryBatch(batch));
            int writtenUnderFive =
                    jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM moments WHERE last_fence_token = 5")
                            .mapTo(Integer.class)
                            .one());
            assertThat(writtenUnderFive).isZero();
            int written = jdbi.withHandle(
                    h -> h.execute("UPDATE moments SET v = 9 WHERE k = CAST('2024-03-10 07:30:00+00' AS timestamptz)"));
            assertThat(written)
                    .as("the plain statement, comparing as timestamptz: two rows")
                    .isEqualTo(2);
        }
    }

    /**
     * REINDEX CONCURRENTLY leaves an equal index under a new OID: batches go on being written, and the
     * writer looks the index up again after the batch that found it changed, not after a batch that merely
     * had a stale row.
     */
    @Test
    void anIndexRebuiltUnderANewOidIsFoundAgainAndOnlyThen() {
        AtomicInteger lookups = new AtomicInteger();
        Jdbi counted = Jdbi.create(db.pool).setSqlLogger(new SqlLogger() {
            @Override
            public void logBeforeExecution(StatementContext context) {
                if (context.getRenderedSql().contains("CROSS JOIN LATERAL unnest(CAST(i.indkey")) {
                    lookups.incrementAndGet();
                }
            }
        });
        FencedWriter countedWriter = FencedWriter.builder(counted).build();
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE numbers_rebuilt (k bigint PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('numbers_rebuilt')");
            h.execute("INSERT INTO numbers_rebuilt (k, v) SELECT g, 0 FROM generate_series(1, 3) AS g");
        });
        FencedTable numbers =
                FencedTable.builder().table("numbers_rebuilt").keyColumns("k").build(db.jdbi);
        long before = indexOid("numbers_rebuilt");
        assertThat(countedWriter.tryBatch(batchOfThree(numbers, 3))).allMatch(WriteOutcome::isApplied);
        assertThat(lookups).hasValue(1);
        assertThat(countedWriter.tryBatch(batchOfThree(numbers, 2))).noneMatch(WriteOutcome::isApplied);
        assertThat(countedWriter.tryBatch(batchOfThree(numbers, 4))).allMatch(WriteOutcome::isApplied);
        assertThat(lookups).as("a stale batch keeps the index").hasValue(1);

        db.jdbi.useHandle(h -> h.execute("REINDEX INDEX CONCURRENTLY numbers_rebuilt_pkey"));
        assertThat(indexOid("numbers_rebuilt")).isNotEqualTo(before);
        assertThat(countedWriter.tryBatch(batchOfThree(numbers, 5))).allMatch(WriteOutcome::isApplied);
        countedWriter.batch(batchOfThree(numbers, 6));
        assertThat(lookups)
                .as("looked up again once, after the batch that found it changed")
                .hasValue(2);
        countedWriter.batch(batchOfThree(numbers, 7));
        assertThat(lookups).hasValue(2);
        assertThat(rows("numbers_rebuilt", "k")).isEqualTo("1=7:7,2=7:7,3=7:7");
    }

    /** The table as built now, and a first batch, written, that has the writer find its unique index. */
    private static FencedTable foundByABatch(FencedWriter writer, Jdbi jdbi, String table, Object key) {
        FencedTable fenced = FencedTable.builder().table(table).keyColumns("k").build(jdbi);
        assertThat(writer.tryBatch(FencedBatch.builder(fenced)
                        .columns("v")
                        .add(3, RowKey.of(key), 1)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(3));
        return fenced;
    }

    /** A batch under token 5 of a key that names two rows by now, and of a key that names none. */
    private static FencedBatch twoKeys(FencedTable table, Object namesTwo, Object namesNone) {
        return FencedBatch.builder(table)
                .columns("v")
                .add(5, RowKey.of(namesTwo), 1)
                .add(5, RowKey.of(namesNone), 2)
                .build();
    }

    private static void assertFailsUndone(ThrowingCallable batch) {
        assertThatThrownBy(batch)
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
    }

    private static FencedBatch batchOfThree(FencedTable table, long token) {
        FencedBatch.Builder batch = FencedBatch.builder(table).columns("v");
        for (long k = 1; k <= 3; k++) {
            batch.add(token, RowKey.of(k), (int) token);
        }
        return batch.build();
    }

    private static long indexOid(String table) {
        return db.jdbi.withHandle(h -> h.createQuery(
                        "SELECT indexrelid FROM pg_index WHERE indrelid = CAST(:t AS regclass) AND indisvalid")
                .bind("t", table)
                .mapTo(Long.class)
                .one());
    }

    private static int plainWrites(String table, String key, String type) {
        return db.jdbi.withHandle(h -> h.execute("UPDATE " + table + " AS t SET v = s.v FROM unnest(CAST(ARRAY["
                + String.join(", ", List.of("'BOB'", "'alice'", "'x'", "'absent'")) + "] AS " + type
                + "[]), ARRAY[1, 2, 3, 4]) AS s(k, v) WHERE t." + key + " = s.k"));
    }

    private static String rows(String table, String key) {
        return db.jdbi.withHandle(
                h -> h.createQuery("SELECT string_agg(" + key + " || '=' || v || ':' || last_fence_token,"
                                + " ',' ORDER BY CAST(" + key + " AS text) COLLATE \"C\") FROM " + table)
                        .mapTo(String.class)
                        .one());
    }
}
