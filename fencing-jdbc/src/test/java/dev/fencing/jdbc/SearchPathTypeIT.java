package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A session whose search path puts a schema before pg_catalog, with a type named {@code text} there: a domain
 * over {@code varchar(1)}, so that {@code CAST('bob' AS text)} reads 'b' on that session. The table was checked
 * on an ordinary session, where its key column's type reads {@code text}. A statement that casts a key to the
 * type by that name would name row 'b' for the key 'bob': a write under a token that 'bob' refuses would land on
 * 'b' and read as applied. The statements name every type they cast to with its schema, so a key names its own
 * row on any search path (as KeyEqualityIT shows for operators, and a count(*) of that schema).
 */
class SearchPathTypeIT {
    static FencingDatabase db;
    static FencedWriter writer;
    static FencedTable names;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("search_path_type_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE names (sku text PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('names')");
            h.execute("CREATE SCHEMA shadow");
            h.execute("CREATE DOMAIN shadow.text AS pg_catalog.varchar(1)");
        });
        names = FencedTable.builder().table("names").keyColumns("sku").build(db.jdbi);
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    /** 'b' at token 0, 'bob' at token 9: a write under token 5 may write 'b' but not 'bob'. */
    @BeforeEach
    void seed() {
        db.jdbi.useHandle(h -> {
            h.execute("DELETE FROM names");
            h.execute("INSERT INTO names (sku, v, last_fence_token) VALUES ('b', 0, 0), ('bob', 0, 9)");
        });
    }

    @Test
    void aStaleUpdateAndBatchOnAShadowingSearchPathAreRejectedAndWriteNoOtherRow() {
        try (Handle shadowed = db.jdbi.open()) {
            shadowed.execute("SET search_path = shadow, pg_catalog, public");
            try {
                assertThat(shadowed.createQuery("SELECT CAST('bob' AS text)")
                                .mapTo(String.class)
                                .one())
                        .as("the session's text is the shadowing domain")
                        .isEqualTo("b");

                assertThat(writer.tryUpdate(
                                shadowed,
                                FencedUpdate.builder(names)
                                        .key("bob")
                                        .set("v", 7)
                                        .build(),
                                5))
                        .isEqualTo(new WriteOutcome.Rejected(9, 5));
                assertThat(rows()).isEqualTo("b=0:0,bob=0:9");

                FencedBatch batch = FencedBatch.builder(names)
                        .columns("v")
                        .add(5, RowKey.of("bob"), 7)
                        .build();
                // the reporting statement alone, in the caller's transaction
                List<WriteOutcome> inTransaction = shadowed.inTransaction(h -> writer.tryBatch(h, batch));
                assertThat(inTransaction).containsExactly(new WriteOutcome.Rejected(9, 5));
                assertThat(rows()).isEqualTo("b=0:0,bob=0:9");
                // auto-committed: the bare statement first, under the unique index the writer found on an
                // ordinary session (on this one it finds the key column's type named otherwise, and does not
                // rely on the index)
                assertThat(writer.tryBatch(batch)).containsExactly(new WriteOutcome.Rejected(9, 5));
                assertThat(writer.tryBatch(shadowed, batch)).containsExactly(new WriteOutcome.Rejected(9, 5));
                assertThat(rows()).isEqualTo("b=0:0,bob=0:9");
            } finally {
                // the pool's connection goes back with the search path it had
                shadowed.execute("RESET search_path");
            }
        }
    }

    @Test
    void aStaleUpsertOnAShadowingSearchPathIsRejectedAndWritesNoOtherRow() {
        // inside jdbi's transaction this thread's handle is the transaction's, shadowed until it ends
        WriteOutcome outcome = db.jdbi.inTransaction(h -> {
            h.execute("SET LOCAL search_path = shadow, pg_catalog, public");
            return writer.tryUpsert(
                    FencedUpsert.builder(names).key("bob").value("v", 7).build(), 5);
        });

        assertThat(outcome).isEqualTo(new WriteOutcome.Rejected(9, 5));
        assertThat(rows()).isEqualTo("b=0:0,bob=0:9");
    }

    /** {@code k=v:token,...} in key order. */
    private static String rows() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(sku || '=' || v || ':' || last_fence_token,"
                        + " ',' ORDER BY sku COLLATE \"C\") FROM names")
                .mapTo(String.class)
                .one());
    }
}
