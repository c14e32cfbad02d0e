package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Properties;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Ways around the counted bare batch (PostgreSQL's count of the table's updated rows, kept before the UPDATE
 * and compared after it): a driver that sends its statements apart, and code of the user's that the UPDATE
 * reaches without a trigger (an operator's function, a function declared immutable that calls a volatile one,
 * a domain's constraint added after the writer found the table). Each test runs a two-row batch on an
 * auto-commit connection, row 1 admitted and row 2 refused (stored token 9, batch token 5): tryBatch must say
 * [Applied(5), Rejected(9, 5)], as with the RETURNING statement, and not throw after committing part of the
 * batch.
 */
class CountedBatchBypassIT {
    static FencingDatabase db;
    static FencedTable tallied;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("counted_batch_bypass_it", 4);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE tallied (id BIGINT PRIMARY KEY, v INT NOT NULL, n INT NOT NULL DEFAULT 0)");
            h.execute("DO $$ BEGIN PERFORM fencing.protect_table('tallied'); END $$");
            h.execute("CREATE FUNCTION tally() RETURNS boolean LANGUAGE plpgsql VOLATILE AS"
                    + " $$ BEGIN UPDATE tallied SET n = n + 1 WHERE id = 0; RETURN true; END $$");
            // a volatile function reached through an operator: the constraint depends on the operator only
            h.execute("CREATE FUNCTION tally_op(int, int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS"
                    + " $$ BEGIN RETURN tally(); END $$");
            h.execute("CREATE OPERATOR === (LEFTARG = int, RIGHTARG = int, FUNCTION = tally_op)");
            // ... and through a function declared IMMUTABLE (PostgreSQL runs the volatile one it calls read-write)
            h.execute("CREATE FUNCTION tally_wrapped(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT tally()'");
        });
        tallied = FencedTable.builder().table("tallied").keyColumns("id").build(db.jdbi);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.jdbi.useHandle(h -> {
            h.execute("ALTER TABLE tallied DROP CONSTRAINT IF EXISTS tally");
            h.execute("ALTER TABLE tallied ALTER COLUMN v TYPE INT");
            h.execute("DROP DOMAIN IF EXISTS tallied_int");
            h.execute("TRUNCATE tallied");
            h.execute("INSERT INTO tallied (id, v, last_fence_token) VALUES (0, 0, 0), (1, 10, 0), (2, 20, 9)");
        });
    }

    private static FencedBatch oneRefused(FencedTable table) {
        return FencedBatch.builder(table)
                .columns("v")
                .add(5, RowKey.of(1L), 11)
                .add(5, RowKey.of(2L), 21)
                .build();
    }

    private static void assertRefusedRowReported(FencedWriter writer, FencedTable table) {
        List<WriteOutcome> outcomes;
        try {
            outcomes = writer.tryBatch(oneRefused(table));
        } catch (RuntimeException e) {
            throw new AssertionError(
                    "tryBatch threw on an auto-commit connection although row 1 committed as " + value(1) + " (row 2 "
                            + value(2) + ", tally " + tally() + ")",
                    e);
        }
        assertThat(outcomes).containsExactly(new WriteOutcome.Applied(5), new WriteOutcome.Rejected(9, 5));
        assertThat(value(1)).isEqualTo("11:5");
        assertThat(value(2)).isEqualTo("20:9");
    }

    /**
     * preferQueryMode=simple: pgjdbc sends each statement as its own Query message, so on an auto-commit
     * connection each would be its own transaction, the UPDATE committed before the count is compared; the
     * statements begin and commit a transaction of their own.
     */
    @Test
    void simpleQueryModeOnAnAutoCommitConnection() {
        Properties properties = new Properties();
        properties.setProperty("user", db.database.user());
        properties.setProperty("password", db.database.password());
        properties.setProperty("preferQueryMode", "simple");
        Jdbi simple = Jdbi.create(db.database.jdbcUrl(), properties);
        assertRefusedRowReported(FencedWriter.builder(simple).build(), tallied);
    }

    /** The same batch inside a caller's transaction in simple mode. */
    @Test
    void simpleQueryModeInACallersTransaction() {
        Properties properties = new Properties();
        properties.setProperty("user", db.database.user());
        properties.setProperty("password", db.database.password());
        properties.setProperty("preferQueryMode", "simple");
        Jdbi simple = Jdbi.create(db.database.jdbcUrl(), properties);
        FencedWriter writer = FencedWriter.builder(simple).build();
        simple.useTransaction(h -> writer.batch(FencedBatch.builder(tallied)
                .columns("v")
                .add(5, RowKey.of(1L), 11)
                .build()));
        assertThat(value(1)).isEqualTo("11:5");
    }

    /** A CHECK constraint whose volatile function is an operator's: pg_depend names the operator, not it. */
    @Test
    void aCheckConstraintReachingAVolatileFunctionThroughAnOperator() {
        db.jdbi.useHandle(h -> h.execute("ALTER TABLE tallied ADD CONSTRAINT tally"
                + " CHECK (CASE WHEN id = 0 THEN true ELSE v === 1 END) NOT VALID"));
        assertRefusedRowReported(FencedWriter.builder(db.jdbi).build(), tallied);
        assertThat(tally()).as("the constraint ran for the one row written").isEqualTo(1);
    }

    /** A CHECK constraint calling an IMMUTABLE function that calls the volatile one. */
    @Test
    void aCheckConstraintReachingAVolatileFunctionThroughAnImmutableOne() {
        db.jdbi.useHandle(h -> h.execute("ALTER TABLE tallied ADD CONSTRAINT tally"
                + " CHECK (CASE WHEN id = 0 THEN true ELSE tally_wrapped(v) END) NOT VALID"));
        assertRefusedRowReported(FencedWriter.builder(db.jdbi).build(), tallied);
    }

    /** A domain's constraint added after the writer found the table (without a lock on the table). */
    @Test
    void aDomainConstraintAddedAfterTheWriterFoundTheTable() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN tallied_int AS INT");
            h.execute("ALTER TABLE tallied ALTER COLUMN v TYPE tallied_int");
        });
        FencedTable table =
                FencedTable.builder().table("tallied").keyColumns("id").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        assertThat(writer.tryBatch(FencedBatch.builder(table)
                        .columns("v")
                        .add(1, RowKey.of(1L), 10)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(1));
        db.jdbi.useHandle(h ->
                h.execute("ALTER DOMAIN tallied_int ADD CONSTRAINT tally CHECK (VALUE <> 21 OR tally()) NOT VALID"));
        assertRefusedRowReported(writer, table);
    }

    /**
     * Driver modes that must not change the outcome, on an auto-commit connection and in a caller's
     * transaction with a savepoint of its own.
     */
    @Test
    void otherDriverModes() {
        for (String[] setting : new String[][] {
            {"preferQueryMode", "extendedCacheEverything"},
            {"preferQueryMode", "extendedForPrepared"},
            {"prepareThreshold", "1"},
            {"autosave", "always"},
        }) {
            rows();
            Properties properties = new Properties();
            properties.setProperty("user", db.database.user());
            properties.setProperty("password", db.database.password());
            properties.setProperty(setting[0], setting[1]);
            Jdbi jdbi = Jdbi.create(db.database.jdbcUrl(), properties);
            FencedWriter writer = FencedWriter.builder(jdbi).build();
            jdbi.useHandle(h -> {
                for (int i = 0; i < 4; i++) {
                    assertThat(writer.tryBatch(FencedBatch.builder(tallied)
                                    .columns("v")
                                    .add(1 + i, RowKey.of(1L), 10 + i)
                                    .build()))
                            .as(setting[0] + "=" + setting[1])
                            .containsExactly(new WriteOutcome.Applied(1 + i));
                }
            });
            assertRefusedRowReported(writer, tallied);
            rows();
            jdbi.useTransaction(h -> {
                h.execute("UPDATE tallied SET n = 7 WHERE id = 0");
                h.execute("SAVEPOINT mine");
                writer.batch(FencedBatch.builder(tallied)
                        .columns("v")
                        .add(5, RowKey.of(1L), 11)
                        .build());
                try {
                    writer.batch(oneRefused(tallied));
                    throw new AssertionError("refused row not thrown");
                } catch (StaleFenceException expected) {
                    // all or nothing, caller's transaction still usable
                }
                h.execute("RELEASE SAVEPOINT mine");
            });
            assertThat(value(1)).as(setting[0]).isEqualTo("11:5");
            assertThat(tally()).as(setting[0]).isEqualTo(7);
        }
    }

    private static long tally() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT n FROM tallied WHERE id = 0")
                .mapTo(Long.class)
                .one());
    }

    private static String value(long id) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT v || ':' || last_fence_token FROM tallied WHERE id = ?")
                .bind(0, id)
                .mapTo(String.class)
                .one());
    }
}
