package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

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
        java.util.List<String> rows = strings("SELECT id || ':' || stock FROM numbered ORDER BY id");
        assertThat(rows).containsExactly("7:4", "8:3", "10:5");
    }

    /**
     * A number or time given for a key column of a text type: a single-row write sends it as what it is, and the
     * cast to text spells it as PostgreSQL does ({@code 1E+2} as {@code 100}, {@code 2026-01-02T10:00} as {@code
     * 2026-01-02 10:00:00}, {@code 10:00} as {@code 10:00:00}, a moment in the session's TimeZone), where a batch
     * sends Java's spelling: an update of {@code BigDecimal("1E+2")} wrote row {@code '100'} and a batch of it row
     * {@code '1E+2'}. Such a key is refused, naming it and the column; its text, given as a String, names one row.
     */
    @Test
    void aNumberOrTimeKeyForATextColumnIsRefusedWhereAnUpdateAndABatchNamedDifferentRows() {
        FencedTable labelled = protectedTable(
                "labelled",
                "name TEXT PRIMARY KEY, stock INT NOT NULL",
                "name",
                "INSERT INTO labelled (name, stock) VALUES ('100', 1), ('1E+2', 1),"
                        + " ('2026-01-02 10:00:00', 1), ('2026-01-02T10:00', 1), ('10:00:00', 1), ('10:00', 1)");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        // what the driver and the cast make of it: a plain update of BigDecimal 1E+2 writes row '100'
        String plain = db.jdbi.withHandle(
                h -> h.createQuery("UPDATE labelled SET stock = stock WHERE name = CAST(:k AS text) RETURNING name")
                        .bind("k", new java.math.BigDecimal("1E+2"))
                        .mapTo(String.class)
                        .one());
        assertThat(plain).isEqualTo("100");

        for (Object key : java.util.List.<Object>of(
                new java.math.BigDecimal("1E+2"),
                java.time.LocalDateTime.of(2026, 1, 2, 10, 0),
                java.time.LocalTime.of(10, 0),
                java.time.OffsetDateTime.of(2026, 1, 2, 10, 0, 0, 0, java.time.ZoneOffset.UTC))) {
            refusalsOf(writer, labelled, key).forEach((write, refusal) -> assertThat(refusal)
                    .as(write + " of " + key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(key.toString())
                    .hasMessageContaining("column name")
                    .hasMessageContaining("String"));
        }
        java.util.List<String> rows =
                strings("SELECT name || ':' || stock || ':' || last_fence_token FROM labelled ORDER BY name");
        assertThat(rows).allMatch(row -> row.endsWith(":1:0"));

        // the key's text names its row, in the batch as in the update
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(labelled)
                                .key("1E+2")
                                .set("stock", 3)
                                .build(),
                        6))
                .isEqualTo(new WriteOutcome.Applied(6));
        assertThat(writer.tryBatch(FencedBatch.builder(labelled)
                        .columns("stock")
                        .add(7, RowKey.of("1E+2"), 4)
                        .build()))
                .containsExactly(new WriteOutcome.Applied(7));
        String written = db.jdbi.withHandle(h -> h.createQuery("SELECT name FROM labelled WHERE stock = 4")
                .mapTo(String.class)
                .one());
        assertThat(written).isEqualTo("1E+2");
    }

    /**
     * A {@code Boolean} for an {@code integer} key column: a single-row write sends it as a boolean, which the cast
     * to integer reads as 1 (or 0), so an update of {@code true} wrote row 1 and said applied, where a batch sends
     * the text {@code true}, which PostgreSQL reads as no integer. Such a key is refused, naming it and the column.
     */
    @Test
    void aBooleanKeyForAnIntegerColumnIsRefusedWhereAnUpdateWroteRowOne() {
        FencedTable counted = protectedTable(
                "counted",
                "id INTEGER PRIMARY KEY, stock INT NOT NULL",
                "id",
                "INSERT INTO counted (id, stock, last_fence_token) VALUES (0, 1, 3), (1, 1, 3)");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        // what the cast makes of it: a plain update of true writes row 1
        Integer plain = db.jdbi.withHandle(
                h -> h.createQuery("UPDATE counted SET stock = stock WHERE id = CAST(:k AS integer) RETURNING id")
                        .bind("k", Boolean.TRUE)
                        .mapTo(Integer.class)
                        .one());
        assertThat(plain).isEqualTo(1);

        for (Boolean key : java.util.List.of(Boolean.TRUE, Boolean.FALSE)) {
            refusalsOf(writer, counted, key).forEach((write, refusal) -> assertThat(refusal)
                    .as(write + " of " + key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("Boolean " + key)
                    .hasMessageContaining("column id"));
        }
        java.util.List<String> rows =
                strings("SELECT id || ':' || stock || ':' || last_fence_token FROM counted ORDER BY id");
        assertThat(rows).containsExactly("0:1:3", "1:1:3");
    }

    /**
     * A citext key column whose type is in a schema off the search path (as extensions are often installed): its
     * type's name reads {@code ext.citext} there, and a number key for it is refused as for any column of a text
     * type, where a single-row update of {@code BigDecimal("1E+2")} wrote row {@code '100'}.
     */
    @Test
    void aNumberKeyForACitextColumnOfASchemaOffTheSearchPathIsRefused() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE SCHEMA ext");
            h.execute("CREATE EXTENSION citext SCHEMA ext");
        });
        FencedTable tagged = protectedTable(
                "tagged",
                "name ext.citext PRIMARY KEY, stock INT NOT NULL",
                "name",
                "INSERT INTO tagged (name, stock) VALUES ('100', 1), ('1E+2', 1)");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        java.math.BigDecimal key = new java.math.BigDecimal("1E+2");

        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(tagged).key(key).set("stock", 2).build(), 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1E+2")
                .hasMessageContaining("column name")
                .hasMessageContaining("String");
        java.util.List<String> rows = strings("SELECT name || ':' || stock FROM tagged ORDER BY name");
        assertThat(rows).containsExactly("100:1", "1E+2:1");
    }

    /**
     * Creates {@code table} with {@code columns}, protects it, runs {@code insert}, and returns it as a fenced table
     * keyed by {@code keyColumn}.
     */
    private static FencedTable protectedTable(String table, String columns, String keyColumn, String insert) {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (" + columns + ")");
            h.execute("DO $$ BEGIN PERFORM fencing.protect_table('" + table + "'); END $$");
            h.execute(insert);
        });
        return FencedTable.builder().table(table).keyColumns(keyColumn).build(db.jdbi);
    }

    /**
     * What an update, an upsert and a batch of {@code key} in {@code table}, each setting stock to 2 under token 5,
     * threw (null where one threw nothing), by write.
     */
    private static java.util.Map<String, Throwable> refusalsOf(FencedWriter writer, FencedTable table, Object key) {
        java.util.Map<String, Throwable> refusals = new java.util.LinkedHashMap<>();
        refusals.put(
                "update",
                catchThrowable(() -> writer.tryUpdate(
                        FencedUpdate.builder(table).key(key).set("stock", 2).build(), 5)));
        refusals.put(
                "upsert",
                catchThrowable(() -> writer.tryUpsert(
                        FencedUpsert.builder(table).key(key).value("stock", 2).build(), 5)));
        refusals.put(
                "batch",
                catchThrowable(() -> writer.tryBatch(FencedBatch.builder(table)
                        .columns("stock")
                        .add(5, RowKey.of(key), 2)
                        .build())));
        return refusals;
    }

    /** The rows a query of one text column answers, in its order. */
    private static java.util.List<String> strings(String query) {
        return db.jdbi.withHandle(h -> h.createQuery(query).mapTo(String.class).list());
    }
}
