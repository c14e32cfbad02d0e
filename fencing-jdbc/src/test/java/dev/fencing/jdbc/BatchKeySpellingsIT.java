package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A batch that names one row twice in spellings the client cannot compare ({@code 7L} and {@code "07"} for
 * a BIGINT key, which the database reads as one number). The builder refuses a key given twice in one
 * spelling; these two reach the database, where the statement itself must find them: a plain UPDATE ...
 * FROM writes the row once, with one of the two rows' values, and says nothing.
 */
class BatchKeySpellingsIT {
    static FencingDatabase db;
    static FencedTable numbered;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("batch_key_spellings_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE numbered (id BIGINT PRIMARY KEY, stock INT NOT NULL)");
            h.execute("DO $$ BEGIN PERFORM fencing.protect_table('numbered'); END $$");
        });
        numbered = FencedTable.builder().table("numbered").keyColumns("id").build(db.jdbi);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void resetRows() {
        db.jdbi.useHandle(h -> {
            h.execute("TRUNCATE numbered");
            h.execute("INSERT INTO numbered (id, stock) VALUES (7, 10), (8, 10)");
        });
    }

    private static FencedBatch sevenTwice() {
        return FencedBatch.builder(numbered)
                .columns("stock")
                .add(5, RowKey.of(8L), 1)
                .add(5, RowKey.of(7L), 2)
                .add(5, RowKey.of("07"), 3)
                .build();
    }

    @Test
    void tryBatchFailsNamingTheKeyAndWritesNothing() {
        for (FencePolicy policy : FencePolicy.values()) {
            FencedWriter writer = FencedWriter.builder(db.jdbi).policy(policy).build();
            assertThatThrownBy(() -> writer.tryBatch(sevenTwice()))
                    .as(policy.toString())
                    .isInstanceOf(FencedWriteException.class)
                    .hasMessageContaining("twice")
                    .hasMessageContaining("07");
            assertThat(rows()).as(policy.toString()).isEqualTo("7=10:0,8=10:0");
        }
    }

    @Test
    void batchInTheCallersTransactionFailsAndTheTransactionGoesOn() {
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        db.jdbi.useTransaction(h -> {
            assertThatThrownBy(() -> writer.batch(sevenTwice())).isInstanceOf(FencedWriteException.class);
            h.execute("UPDATE numbered SET stock = 99 WHERE id = 8");
        });
        assertThat(rows()).isEqualTo("7=10:0,8=99:0");
    }

    /** The same rows as a plain UPDATE ... FROM: one row written, with one of the two values, and no error. */
    @Test
    void withoutTheFenceThePlainStatementWritesTheRowOnceAndSaysNothing() {
        int written = db.jdbi.withHandle(h -> h.execute("UPDATE numbered AS t SET stock = v.stock"
                + " FROM unnest(CAST(ARRAY['8', '7', '07'] AS bigint[]), ARRAY[1, 2, 3]) AS v(id, stock)"
                + " WHERE t.id = v.id"));
        assertThat(written).isEqualTo(2);
        assertThat(rows()).matches("7=[23]:0,8=1:0");
    }

    private static String rows() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(id || '=' || stock || ':' || last_fence_token,"
                        + " ',' ORDER BY id) FROM numbered")
                .mapTo(String.class)
                .one());
    }

    @Test
    void aWholeValuedDecimalKeyNamesItsRowInABatchAsInASingleRowWrite() {
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        db.jdbi.useHandle(h -> h.execute("INSERT INTO numbered (id, stock) VALUES (10, 10)"));
        FencedUpdate single = FencedUpdate.builder(numbered)
                .key(new java.math.BigDecimal("7.00"))
                .set("stock", 1)
                .build();
        assertThat(writer.tryUpdate(single, 5)).isEqualTo(new WriteOutcome.Applied(5));
        FencedBatch batch = FencedBatch.builder(numbered)
                .columns("stock")
                .add(6, RowKey.of(new java.math.BigDecimal("7.00")), 2)
                .add(6, RowKey.of(new java.math.BigDecimal("8E+0")), 3)
                .build();
        assertThat(writer.tryBatch(batch)).containsExactly(new WriteOutcome.Applied(6), new WriteOutcome.Applied(6));
        writer.batch(FencedBatch.builder(numbered)
                .columns("stock")
                .add(7, RowKey.of(new java.math.BigDecimal("0.7E+1")), 4)
                .add(7, RowKey.of(new java.math.BigDecimal("1E+1")), 5)
                .build());
        java.util.List<String> rows =
                db.jdbi.withHandle(h -> h.createQuery("SELECT id || ':' || stock FROM numbered ORDER BY id")
                        .mapTo(String.class)
                        .list());
        assertThat(rows).containsExactly("7:4", "8:3", "10:5");
    }
}
