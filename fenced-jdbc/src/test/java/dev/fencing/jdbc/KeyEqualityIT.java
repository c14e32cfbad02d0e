package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A database where someone defined {@code =} on varchar, case-insensitive, in {@code public}: an exact match
 * on the search path, so an unqualified {@code k = CAST(:key AS varchar)} takes it over pg_catalog's text
 * {@code =}, which the unique index on {@code k} compares with. The index lets 'Bob' and 'bob' in side by
 * side; under that {@code =} the key 'bob' names both. The fenced statements compare with the operator the
 * index uses, named with its schema, and write 'bob' only. Each test also shows the plain statement writing
 * both rows. (A database of its own: the operator would change every other test's statements.)
 */
class KeyEqualityIT {
    static FencingDatabase db;
    static FencedWriter writer;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("key_equality_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE FUNCTION public.ci_eq(varchar, varchar) RETURNS boolean LANGUAGE sql IMMUTABLE"
                    + " AS 'SELECT lower($1) = lower($2)'");
            h.execute("CREATE OPERATOR public.= (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public.ci_eq)");
        });
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void anUpdateWritesTheRowItsKeyNamesUnderTheIndexesEquality() {
        FencedTable names = table("names_updated");

        WriteOutcome outcome = writer.tryUpdate(
                FencedUpdate.builder(names).key("bob").set("v", 7).build(), 5);

        assertThat(outcome).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(rows("names_updated")).isEqualTo("Bob=0:0,bob=7:5");
        assertThat(plainWrites("names_updated"))
                .as("the plain statement's = names both")
                .isEqualTo(2);
    }

    @Test
    void aBatchWritesTheRowsItsKeysNameAndReportsTheKeyThatNamesNone() {
        FencedTable names = table("names_batched");
        FencedBatch batch = FencedBatch.builder(names)
                .columns("v")
                .add(5, RowKey.of("bob"), 7)
                .add(5, RowKey.of("zed"), 8)
                .build();

        List<WriteOutcome> outcomes = writer.tryBatch(batch);

        // under the other =, 'bob' wrote two rows and 'zed' none: a count of two for two keys
        assertThat(outcomes).containsExactly(new WriteOutcome.Applied(5), new WriteOutcome.NotFound(5));
        assertThat(rows("names_batched")).isEqualTo("Bob=0:0,bob=7:5");
        assertThat(plainWrites("names_batched"))
                .as("the plain statement's = names both")
                .isEqualTo(2);
    }

    @Test
    void anAllOrNothingBatchIsRefusedWithNothingWritten() {
        FencedTable names = table("names_all_or_nothing");
        FencedBatch batch = FencedBatch.builder(names)
                .columns("v")
                .add(5, RowKey.of("bob"), 7)
                .add(5, RowKey.of("zed"), 8)
                .build();

        assertThatThrownBy(() -> writer.batch(batch))
                .isInstanceOf(FencedRowNotFoundException.class)
                .hasMessageContaining("zed");
        assertThat(rows("names_all_or_nothing")).isEqualTo("Bob=0:0,bob=0:0");
    }

    /** A protected table keyed by a varchar column, holding 'Bob' and 'bob', checked by a writer. */
    private static FencedTable table(String name) {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + name + " (k varchar NOT NULL PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + name + "')");
            h.execute("INSERT INTO " + name + " (k, v) VALUES ('Bob', 0), ('bob', 0)");
        });
        return FencedTable.builder().table(name).keyColumns("k").build(db.jdbi);
    }

    /** {@code k=v:token,...} in key order (byte order, so 'Bob' before 'bob'). */
    private static String rows(String table) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(k || '=' || v || ':' || last_fence_token,"
                        + " ',' ORDER BY k COLLATE \"C\") FROM " + table)
                .mapTo(String.class)
                .one());
    }

    /** The rows a plain UPDATE by the same key writes (rolled back). */
    private static int plainWrites(String table) {
        return db.jdbi.inTransaction(h -> {
            int written = h.execute("UPDATE " + table + " SET v = 9 WHERE k = CAST('bob' AS varchar)");
            h.rollback();
            return written;
        });
    }
}
