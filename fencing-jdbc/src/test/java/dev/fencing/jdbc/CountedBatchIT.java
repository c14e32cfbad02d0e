package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.function.Consumer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The bare batch statement counts the rows it wrote by PostgreSQL's count of the table's rows updated in the
 * transaction, read before and after its UPDATE, when nothing else the UPDATE sets off can update the table.
 * Each test here gives the table something that does (a trigger, a CHECK constraint, a domain, each writing
 * to a tally row of the same table) and a batch with refused rows: the writes of the user's code would
 * make up the count for the refused rows, and the batch would read as applied. The writer must see it and
 * count with RETURNING instead, also when it found the table without it earlier.
 */
class CountedBatchIT {
    static FencingDatabase db;
    static FencedTable tallied;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("counted_batch_it", 4);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE tallied (id BIGINT PRIMARY KEY, v INT NOT NULL, n INT NOT NULL DEFAULT 0)");
            h.execute("DO $$ BEGIN PERFORM fencing.protect_table('tallied'); END $$");
            // the user's code in the tests below: count a write to another row into row 0
            h.execute("CREATE FUNCTION tally() RETURNS boolean LANGUAGE plpgsql VOLATILE AS"
                    + " $$ BEGIN UPDATE tallied SET n = n + 1 WHERE id = 0; RETURN true; END $$");
            h.execute("CREATE FUNCTION tally_trigger() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN PERFORM tally(); RETURN NEW; END $$");
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
            h.execute("DROP TRIGGER IF EXISTS tally ON tallied");
            h.execute("ALTER TABLE tallied DROP CONSTRAINT IF EXISTS tally");
            h.execute("ALTER TABLE tallied DISABLE ROW LEVEL SECURITY");
            h.execute("ALTER TABLE tallied ALTER COLUMN v TYPE INT");
            h.execute("DROP DOMAIN IF EXISTS tallied_int");
            h.execute("TRUNCATE tallied");
            h.execute("INSERT INTO tallied (id, v, last_fence_token) VALUES (0, 0, 0), (1, 10, 0), (2, 20, 9)");
        });
    }

    /** Rows 1 (token 0) and 2 (token 9) under token 5: row 2 is refused. */
    private static FencedBatch oneRefused() {
        return FencedBatch.builder(tallied)
                .columns("v")
                .add(5, RowKey.of(1L), 11)
                .add(5, RowKey.of(2L), 21)
                .build();
    }

    @Test
    void aPlainTableIsCountedWithoutReturning() {
        // the counted statement's last part compares the server's count; the session that ran it shows it as
        // its last statement
        FencedWriter.builder(db.jdbi)
                .build()
                .batch(FencedBatch.builder(tallied)
                        .columns("v")
                        .add(5, RowKey.of(1L), 11)
                        .build());
        assertThat(lastStatements()).anySatisfy(query -> assertThat(query).contains("pg_stat_get_xact_tuples_updated"));
        assertThat(value(1)).isEqualTo("11:5");
    }

    /**
     * The pooled sessions' last statements, read on a connection of its own (the pool's could be the one that
     * ran the statement looked for).
     */
    private static List<String> lastStatements() {
        return Jdbi.create(db.database.dataSource()).withHandle(h -> h.createQuery("SELECT query FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND pid <> pg_backend_pid()")
                .mapTo(String.class)
                .list());
    }

    @Test
    void aTableWithRowSecurityIsCountedWithReturning() {
        // a policy's expression may call a function that writes the table (not shown here: the tests' role
        // is a superuser, which row security does not apply to)
        db.jdbi.useHandle(h -> h.execute("ALTER TABLE tallied ENABLE ROW LEVEL SECURITY"));
        FencedWriter.builder(db.jdbi)
                .build()
                .batch(FencedBatch.builder(tallied)
                        .columns("v")
                        .add(5, RowKey.of(1L), 11)
                        .build());
        assertThat(lastStatements())
                .anySatisfy(query ->
                        assertThat(query).contains("RETURNING 1").doesNotContain("pg_stat_get_xact_tuples_updated"));
        assertThat(value(1)).isEqualTo("11:5");
    }

    /**
     * A trigger that writes the tally row once for each row the batch writes. The refused row 2 leaves the
     * UPDATE one row short, and the trigger's write to row 0 makes it up: counted that way, the two-row
     * batch reads as two rows written. The writer that finds the trigger counts with RETURNING; the one that
     * found the table before the trigger was created finds it in the statement.
     */
    @Test
    void aTriggerWritingTheTableMakesTheWriterCountWithReturningAlsoWhenItWasAddedAfterTheWriterFoundTheTable() {
        FencedWriter before = FencedWriter.builder(db.jdbi).build();
        assertThat(before.tryBatch(FencedBatch.builder(tallied)
                        .columns("v")
                        .add(1, RowKey.of(1L), 10)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(1));
        db.jdbi.useHandle(h -> h.execute("CREATE TRIGGER tally AFTER UPDATE ON tallied FOR EACH ROW"
                + " WHEN (NEW.id <> 0) EXECUTE FUNCTION tally_trigger()"));

        assertThat(updatedCountOf(oneRefused(), "int"))
                .as("what the server counts for the batch's UPDATE with the trigger: one row written, one tallied")
                .isEqualTo(2);
        rows();
        db.jdbi.useHandle(h -> h.execute("CREATE TRIGGER tally AFTER UPDATE ON tallied FOR EACH ROW"
                + " WHEN (NEW.id <> 0) EXECUTE FUNCTION tally_trigger()"));

        assertRefusedRowReported(before);
        rows();
        db.jdbi.useHandle(h -> h.execute("CREATE TRIGGER tally AFTER UPDATE ON tallied FOR EACH ROW"
                + " WHEN (NEW.id <> 0) EXECUTE FUNCTION tally_trigger()"));
        assertRefusedRowReported(FencedWriter.builder(db.jdbi).build());
    }

    /** A CHECK constraint calling the tallying function: it runs for the row the batch writes. */
    @Test
    void aCheckConstraintCallingAVolatileFunctionMakesTheWriterCountWithReturning() {
        FencedWriter before = FencedWriter.builder(db.jdbi).build();
        assertThat(before.tryBatch(FencedBatch.builder(tallied)
                        .columns("v")
                        .add(1, RowKey.of(1L), 10)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(1));
        Consumer<Handle> constraint =
                h -> h.execute("ALTER TABLE tallied ADD CONSTRAINT tally CHECK (id = 0 OR tally()) NOT VALID");
        db.jdbi.useHandle(constraint::accept);

        assertThat(updatedCountOf(oneRefused(), "int")).isEqualTo(2);
        rows();
        db.jdbi.useHandle(constraint::accept);

        assertRefusedRowReported(before);
        rows();
        db.jdbi.useHandle(constraint::accept);
        assertRefusedRowReported(FencedWriter.builder(db.jdbi).build());
    }

    /**
     * A domain whose CHECK calls the tallying function, as the type of the written column: every value of
     * the batch is cast to it, so every row tallies, written or not. A domain is checked when the writer
     * finds the table (its constraint can change without a lock on the table), so the writer here is new.
     */
    @Test
    void aColumnOfADomainWhoseCheckCallsAVolatileFunctionMakesTheWriterCountWithReturning() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE DOMAIN tallied_int AS INT");
            h.execute("ALTER TABLE tallied ALTER COLUMN v TYPE tallied_int");
            h.execute("ALTER DOMAIN tallied_int ADD CONSTRAINT tally CHECK (tally()) NOT VALID");
            h.execute("UPDATE tallied SET last_fence_token = 9 WHERE id = 1");
        });
        FencedTable table =
                FencedTable.builder().table("tallied").keyColumns("id").build(db.jdbi);
        FencedBatch bothRefused = FencedBatch.builder(table)
                .columns("v")
                .add(5, RowKey.of(1L), 11)
                .add(5, RowKey.of(2L), 21)
                .build();
        assertThat(updatedCountOf(bothRefused, "tallied_int"))
                .as("no row written, two tallied")
                .isEqualTo(2);

        assertThat(FencedWriter.builder(db.jdbi).build().tryBatch(bothRefused))
                .containsExactly(new WriteOutcome.Rejected(9, 5), new WriteOutcome.Rejected(9, 5));
        assertThat(value(1)).isEqualTo("10:9");
        assertThat(value(2)).isEqualTo("20:9");
    }

    private static void assertRefusedRowReported(FencedWriter writer) {
        assertThat(writer.tryBatch(oneRefused()))
                .containsExactly(new WriteOutcome.Applied(5), new WriteOutcome.Rejected(9, 5));
        assertThat(value(1)).isEqualTo("11:5");
        assertThat(value(2)).as("refused, not written").isEqualTo("20:9");
    }

    /**
     * What the server's count of the table's updated rows grows by over a plain UPDATE of the batch's shape,
     * each row written only under its fence and the values cast to {@code valueType}, in a transaction
     * rolled back after.
     */
    private static long updatedCountOf(FencedBatch batch, String valueType) {
        return db.jdbi.withHandle(h -> {
            h.begin();
            try {
                long before = updated(h);
                h.createUpdate("UPDATE tallied AS t SET v = input.v, last_fence_token = :token"
                                + " FROM unnest(CAST(:ids AS bigint[]), CAST(CAST(:vs AS int[]) AS " + valueType
                                + "[])) AS input(id, v) WHERE t.id = input.id AND t.last_fence_token < :token")
                        .bind("token", batch.token(0))
                        .bindArray("ids", Long.class, batch.keyValues(0))
                        .bindArray("vs", Integer.class, batch.values(0))
                        .execute();
                return updated(h) - before;
            } finally {
                h.rollback();
            }
        });
    }

    private static long updated(Handle h) {
        return h.createQuery("SELECT pg_stat_get_xact_tuples_updated('tallied'::regclass)")
                .mapTo(Long.class)
                .one();
    }

    private static String value(long id) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT v || ':' || last_fence_token FROM tallied WHERE id = ?")
                .bind(0, id)
                .mapTo(String.class)
                .one());
    }
}
