package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Sessions whose search path puts a schema before pg_catalog, with an {@code =} there that the catalog queries
 * would take for pg_catalog's: the table check ({@link FencedTable.Builder#build}) and the batch's look-up of its
 * unique index decide which unique key a table's key columns have, and a key they wrongly find unique names two
 * rows. The catalog queries name every operator and function with its schema, as the statements do (see
 * SearchPathTypeIT for the types), so that no session's search path changes what they find. (A database of its
 * own: the operators are in a schema that only the test's sessions put on their path, but the tables are its own.)
 */
class SearchPathCatalogIT {
    static FencingDatabase db;
    static FencedWriter writer;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("search_path_catalog_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE SCHEMA shadow");
            // names compared case-insensitively, as some tools treat identifiers
            h.execute("CREATE FUNCTION shadow.name_ci(name, name) RETURNS boolean LANGUAGE sql IMMUTABLE AS"
                    + " 'SELECT pg_catalog.lower(CAST($1 AS pg_catalog.text)) OPERATOR(pg_catalog.=)"
                    + " pg_catalog.lower(CAST($2 AS pg_catalog.text))'");
            h.execute("CREATE OPERATOR shadow.= (LEFTARG = name, RIGHTARG = name, FUNCTION = shadow.name_ci)");
            // and a schema whose = on oid holds for any two
            h.execute("CREATE SCHEMA any_oid");
            h.execute("CREATE FUNCTION any_oid.oid_any(oid, oid) RETURNS boolean LANGUAGE sql IMMUTABLE AS"
                    + " 'SELECT TRUE'");
            h.execute("CREATE OPERATOR any_oid.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = any_oid.oid_any)");
        });
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    /**
     * {@code lots} is unique on "LOT" (quoted, upper case) and not on {@code lot}; on a session whose {@code =} on
     * names ignores case, an unqualified check would read the primary key's "LOT" as the key column {@code lot}
     * and accept {@code lot} as a unique key, and a fenced update of lot 'a' would write both of its rows.
     */
    @Test
    void aCaseInsensitiveNameEqualityOnTheSearchPathDoesNotMakeANonUniqueColumnAKey() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE lots (\"LOT\" text PRIMARY KEY, lot text NOT NULL, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('lots')");
            h.execute("INSERT INTO lots (\"LOT\", lot, v) VALUES ('A-1', 'a', 0), ('A-2', 'a', 0)");
        });
        try (Handle shadowed = db.jdbi.open()) {
            shadowed.execute("SET search_path = shadow, pg_catalog, public");
            try {
                assertThat(shadowed.createQuery("SELECT CAST('lot' AS name) = CAST('LOT' AS name)")
                                .mapTo(Boolean.class)
                                .one())
                        .as("the session's = on names ignores case")
                        .isTrue();

                assertThatThrownBy(() -> FencedTable.builder()
                                .table("lots")
                                .keyColumns("lot")
                                .build(shadowed))
                        .isInstanceOf(FencedTableException.class)
                        .hasMessageContaining("are not a unique key of public.lots");
            } finally {
                // the pool's connection goes back with the search path it had
                shadowed.execute("RESET search_path");
            }
        }
    }

    /**
     * The batch relies on the unique index it found on an ordinary session, and confirms in its statement that the
     * index still stands. It was dropped since, and the key 'a' now names two rows: on a session whose {@code =} on
     * oid holds for any two, an unqualified confirmation would find the dropped index standing, and a batch of 'a'
     * (two rows written) and the absent 'z' (none) would count two rows for two keys and read as all applied.
     */
    @Test
    void anOidEqualityOnTheSearchPathDoesNotMakeADroppedKeyIndexStand() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE parcels (code text NOT NULL, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX parcels_code ON parcels (code)");
            h.execute("SELECT fencing.protect_table('parcels', ARRAY['code'])");
            h.execute("INSERT INTO parcels (code, v) VALUES ('a', 0)");
        });
        FencedTable parcels =
                FencedTable.builder().table("parcels").keyColumns("code").build(db.jdbi);
        // the writer finds the index on an ordinary session
        assertThat(writer.tryBatch(FencedBatch.builder(parcels)
                        .columns("v")
                        .add(1, RowKey.of("a"), 1)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(1));
        db.jdbi.useHandle(h -> {
            h.execute("DROP INDEX parcels_code");
            h.execute("INSERT INTO parcels (code, v) VALUES ('a', 0)");
        });
        FencedBatch batch = FencedBatch.builder(parcels)
                .columns("v")
                .add(5, RowKey.of("a"), 7)
                .add(5, RowKey.of("z"), 7)
                .build();

        try (Handle shadowed = db.jdbi.open()) {
            shadowed.execute("SET search_path = any_oid, pg_catalog, public");
            try {
                assertThat(shadowed.createQuery("SELECT CAST(1 AS oid) = CAST(2 AS oid)")
                                .mapTo(Boolean.class)
                                .one())
                        .as("the session's = on oid holds for any two")
                        .isTrue();

                // auto-committed: the bare statement first, then the reporting one, which finds 'a' naming two rows
                assertThatThrownBy(() -> writer.tryBatch(shadowed, batch))
                        .isInstanceOf(FencedWriteException.class)
                        .hasMessageContaining("no longer name one row");
            } finally {
                shadowed.execute("RESET search_path");
            }
        }
        List<String> rows = db.jdbi.withHandle(
                h -> h.createQuery("SELECT code || '=' || v || ':' || last_fence_token FROM parcels ORDER BY 1")
                        .mapTo(String.class)
                        .list());
        assertThat(rows).as("nothing written").containsExactly("a=0:0", "a=1:1");
    }
}
