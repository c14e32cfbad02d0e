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

    /**
     * A domain over citext whose own {@code =}, in {@code public} beside citext's, ignores what follows a '+':
     * an exact match for the domain, it would win over citext's {@code =} (the class of the index). The
     * statements compare as citext, cast on both sides, and 'a+1@x.org' names its own row only.
     */
    @Test
    void aDomainsOwnEqualityDoesNotReplaceTheEqualityOfItsIndexesClass() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE EXTENSION IF NOT EXISTS citext");
            h.execute("CREATE DOMAIN public.email AS citext");
            h.execute("CREATE FUNCTION public.email_eq(email, email) RETURNS boolean LANGUAGE sql IMMUTABLE"
                    + " AS $$SELECT lower(split_part($1::text, '+', 1)) = lower(split_part($2::text, '+', 1))$$");
            h.execute("CREATE OPERATOR public.= (LEFTARG = email, RIGHTARG = email, FUNCTION = public.email_eq)");
            h.execute("CREATE TABLE mails (k email PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('mails')");
            h.execute("INSERT INTO mails (k, v) VALUES ('a+1@x.org', 0), ('a+2@x.org', 0), ('b@x.org', 0)");
            h.execute("UPDATE mails SET last_fence_token = 9 WHERE k::text = 'b@x.org'");
        });
        FencedTable mails = FencedTable.builder().table("mails").keyColumns("k").build(db.jdbi);

        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(mails).key("A+1@x.org").set("v", 7).build(), 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(writer.tryBatch(FencedBatch.builder(mails)
                        .columns("v")
                        .add(6, RowKey.of("a+1@x.org"), 8)
                        .add(6, RowKey.of("b@x.org"), 8)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(6), new WriteOutcome.Rejected(9, 6));

        String rows = db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(k || '=' || v || ':'"
                        + " || last_fence_token, ',' ORDER BY k::text) FROM mails")
                .mapTo(String.class)
                .one());
        assertThat(rows).isEqualTo("a+1@x.org=8:6,a+2@x.org=0:0,b@x.org=0:9");
        int plain = db.jdbi.inTransaction(h -> {
            int written = h.execute("UPDATE mails SET v = 1 WHERE k = CAST('a+1@x.org' AS email)");
            h.rollback();
            return written;
        });
        assertThat(plain).as("the plain statement's = names both a+ rows").isEqualTo(2);
    }

    /** Key columns of enum and array types, outside the primary key and as one: compared with pg_catalog's =. */
    @Test
    void enumAndArrayKeyColumnsAreComparedWithTheirPolymorphicClassesEquality() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TYPE kind AS ENUM ('a', 'b')");
            h.execute("CREATE TABLE kinds (id bigint PRIMARY KEY, kind kind NOT NULL, tags int[] NOT NULL,"
                    + " v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('kinds', ARRAY['id'])");
            h.execute("INSERT INTO kinds (id, kind, tags, v) VALUES (1, 'a', '{1,2}', 0)");
            h.execute("CREATE TABLE by_kind (kind kind PRIMARY KEY, v int NOT NULL)");
            h.execute("SELECT fencing.protect_table('by_kind')");
            h.execute("INSERT INTO by_kind (kind, v) VALUES ('a', 0), ('b', 0)");
        });
        FencedTable kinds =
                FencedTable.builder().table("kinds").keyColumns("id", "kind").build(db.jdbi);
        FencedTable byKind =
                FencedTable.builder().table("by_kind").keyColumns("kind").build(db.jdbi);

        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(kinds).key(1L, "a").set("v", 7).build(), 5))
                .isEqualTo(new WriteOutcome.Applied(5));
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(kinds).key(1L, "b").set("v", 8).build(), 6))
                .isEqualTo(new WriteOutcome.NotFound(6));
        assertThat(writer.tryBatch(FencedBatch.builder(byKind)
                        .columns("v")
                        .add(5, RowKey.of("b"), 9)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(5));
        int v = db.jdbi.withHandle(h -> h.createQuery("SELECT v FROM by_kind WHERE kind = 'b'")
                .mapTo(Integer.class)
                .one());
        assertThat(v).isEqualTo(9);
    }

    /**
     * A {@code public.unnest(text[])} that sorts its elements: an exact match for the report's one array of
     * text keys, it would pair each key with another's position. The statements call pg_catalog's.
     */
    @Test
    void anUnnestOnTheSearchPathDoesNotReorderABatchsReport() {
        FencedTable names = table("names_unnest");
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE names_unnest SET last_fence_token = 9 WHERE k = CAST('bob' AS text)");
            h.execute("CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE sql IMMUTABLE"
                    + " AS 'SELECT x FROM pg_catalog.unnest($1) AS x ORDER BY x DESC'");
        });
        try {
            // 'bob' stale (stored 9), '0' absent: the sorting unnest would swap their reports
            List<WriteOutcome> outcomes = writer.tryBatch(FencedBatch.builder(names)
                    .columns("v")
                    .add(5, RowKey.of("bob"), 7)
                    .add(5, RowKey.of("0"), 7)
                    .build());
            assertThat(outcomes).containsExactly(new WriteOutcome.Rejected(9, 5), new WriteOutcome.NotFound(5));
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP FUNCTION public.unnest(text[])"));
        }
    }

    /**
     * A search path that puts a schema before pg_catalog, whose {@code count(*)} always says a million: the
     * report's count of written rows would make a stale write read as applied. The statements call
     * pg_catalog's count, and compare tokens with pg_catalog's operators.
     */
    @Test
    void aSchemaBeforePgCatalogOnTheSearchPathDoesNotMakeAStaleWriteReadApplied() {
        FencedTable names = table("names_evil");
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE names_evil SET last_fence_token = 9 WHERE k = CAST('bob' AS text)");
            h.execute("CREATE SCHEMA evil");
            h.execute("CREATE FUNCTION evil.cnt(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT $1 + 1'");
            h.execute("CREATE FUNCTION evil.cnt_final(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1000000::int8'");
            h.execute("CREATE AGGREGATE evil.count(*) (SFUNC = evil.cnt, STYPE = bigint, INITCOND = '0',"
                    + " FINALFUNC = evil.cnt_final)");
        });
        try (org.jdbi.v3.core.Handle evil = db.jdbi.open()) {
            evil.execute("SET search_path = evil, pg_catalog, public");
            try {
                long counted = evil.createQuery("SELECT count(*) FROM names_evil")
                        .mapTo(Long.class)
                        .one();
                assertThat(counted)
                        .as("the schema's count is the one a bare count(*) takes")
                        .isEqualTo(1_000_000L);

                assertThat(writer.tryUpdate(
                                evil,
                                FencedUpdate.builder(names)
                                        .key("bob")
                                        .set("v", 7)
                                        .build(),
                                5))
                        .isEqualTo(new WriteOutcome.Rejected(9, 5));
                assertThat(writer.tryUpdate(
                                evil,
                                FencedUpdate.builder(names)
                                        .key("zed")
                                        .set("v", 7)
                                        .build(),
                                5))
                        .isEqualTo(new WriteOutcome.NotFound(5));
            } finally {
                // the pool's connection goes back with the search path it had
                evil.execute("RESET search_path");
            }
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP SCHEMA evil CASCADE"));
        }
    }

    /**
     * A second unique index on the key that compares coarser than the primary key ({@code bpchar_ops} on
     * varchar ignores trailing spaces): {@code ON CONFLICT (k)} alone takes it as an arbiter too, and an upsert
     * of 'a  ' updates row 'a'. Named with its collation and class, the conflict target is the primary key
     * alone: the insert of 'a  ' meets the other index's unique violation, and nothing is written.
     */
    @Test
    void anUpsertIsDecidedByTheIndexThatComparesAsTheStatementsNotByACoarserOne() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE padded (k varchar PRIMARY KEY, v int NOT NULL)");
            h.execute("CREATE UNIQUE INDEX padded_blank_insensitive ON padded (k bpchar_ops)");
            h.execute("SELECT fencing.protect_table('padded')");
            h.execute("INSERT INTO padded (k, v) VALUES ('a', 0)");
        });
        FencedTable padded =
                FencedTable.builder().table("padded").keyColumns("k").build(db.jdbi);

        assertThatThrownBy(() -> writer.tryUpsert(
                        FencedUpsert.builder(padded).key("a  ").value("v", 7).build(), 5))
                .hasMessageContaining("padded_blank_insensitive");
        assertThat(writer.tryUpsert(
                        FencedUpsert.builder(padded).key("a").value("v", 8).build(), 6))
                .isEqualTo(new WriteOutcome.Applied(6));
        String rows = db.jdbi.withHandle(h -> h.createQuery(
                        "SELECT string_agg('[' || k || ']=' || v || ':' || last_fence_token, ',') FROM padded")
                .mapTo(String.class)
                .one());
        assertThat(rows).isEqualTo("[a]=8:6");
        int plain = db.jdbi.inTransaction(h -> {
            int written = h.execute("INSERT INTO padded (k, v) VALUES ('a  ', 9) ON CONFLICT (k) DO UPDATE SET v = 9");
            h.rollback();
            return written;
        });
        assertThat(plain)
                .as("the plain ON CONFLICT (k) updates row 'a' for 'a  '")
                .isEqualTo(1);
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
