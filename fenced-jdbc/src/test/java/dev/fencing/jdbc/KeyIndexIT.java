package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
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
        FencedTable names =
                FencedTable.builder().table("names_replaced").keyColumns("k").build(db.jdbi);
        // the first batch finds the index and keeps it
        assertThat(writer.tryBatch(FencedBatch.builder(names)
                        .columns("v")
                        .add(3, RowKey.of("carol"), 1)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(3));
        db.jdbi.useHandle(h -> {
            h.execute("DROP INDEX names_replaced_k");
            h.execute("CREATE UNIQUE INDEX names_replaced_k_text ON names_replaced (k text_ops)");
            h.execute("INSERT INTO names_replaced (k, v) VALUES ('bob', 0)");
        });
        FencedBatch batch = FencedBatch.builder(names)
                .columns("v")
                .add(5, RowKey.of("BOB"), 1)
                .add(5, RowKey.of("alice"), 2)
                .build();

        assertThatThrownBy(() -> writer.tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
        assertThatThrownBy(() -> writer.batch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
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
        FencedTable names =
                FencedTable.builder().table("names_renamed").keyColumns("k").build(db.jdbi);
        assertThat(writer.tryBatch(FencedBatch.builder(names)
                        .columns("v")
                        .add(3, RowKey.of("a"), 1)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(3));
        // the primary key stays on the column now named k_old; k is now a column with 'x' twice
        db.jdbi.useHandle(h -> {
            h.execute("ALTER TABLE names_renamed RENAME COLUMN k TO k_old");
            h.execute("ALTER TABLE names_renamed RENAME COLUMN j TO k");
        });
        FencedBatch batch = FencedBatch.builder(names)
                .columns("v")
                .add(5, RowKey.of("x"), 1)
                .add(5, RowKey.of("absent"), 2)
                .build();

        assertThatThrownBy(() -> writer.tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("no longer name one row");
        assertThat(rows("names_renamed", "k_old")).isEqualTo("a=1:3,b=0:0");
        assertThat(plainWrites("names_renamed", "k", "text"))
                .as("the plain statement: 'x' wrote two rows, 'absent' none")
                .isEqualTo(2);
    }

    /** REINDEX CONCURRENTLY leaves an equal index under a new OID: batches go on being written. */
    @Test
    void anIndexRebuiltUnderANewOidIsFoundAgain() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE numbers_rebuilt (k bigint PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('numbers_rebuilt')");
            h.execute("INSERT INTO numbers_rebuilt (k, v) SELECT g, 0 FROM generate_series(1, 3) AS g");
        });
        FencedTable numbers =
                FencedTable.builder().table("numbers_rebuilt").keyColumns("k").build(db.jdbi);
        long before = indexOid("numbers_rebuilt");
        assertThat(writer.tryBatch(batchOfThree(numbers, 3))).allMatch(WriteOutcome::isApplied);
        db.jdbi.useHandle(h -> h.execute("REINDEX INDEX CONCURRENTLY numbers_rebuilt_pkey"));
        assertThat(indexOid("numbers_rebuilt")).isNotEqualTo(before);

        assertThat(writer.tryBatch(batchOfThree(numbers, 4))).allMatch(WriteOutcome::isApplied);
        writer.batch(batchOfThree(numbers, 5));
        assertThat(rows("numbers_rebuilt", "k")).isEqualTo("1=5:5,2=5:5,3=5:5");
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
