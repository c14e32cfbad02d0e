package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.InvalidFenceTokenException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue test 5: bad identifiers, unknown tables and columns, and tokens {@code <= 0} fail with clear
 * errors, and nothing is written; a bad token is refused before a connection is even taken.
 */
class InvalidInputIT {
    static FencingDatabase db;
    static FencedTable inventory;

    FencedWriter writer;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("invalid_it", 2);
        inventory = db.inventory();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.reset("A-1");
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "inventory; DROP TABLE inventory",
                "inventory\" --",
                "Inventory",
                "1nventory",
                "",
                "a_name_that_is_far_too_long_for_postgresql_which_stops_at_63_bytes"
            })
    void refusesIdentifiersOutsideTheStrictPatternNamingTheValue(String bad) {
        assertThatThrownBy(() -> FencedTable.builder().table(bad))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("table '" + bad + "' is not a valid identifier");
        assertThatThrownBy(() -> FencedTable.builder().keyColumns("sku", bad))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + bad + "'");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory).set(bad, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + bad + "'");
        assertThat(db.row("A-1")).isEqualTo("10:0");
    }

    @Test
    void refusesTablesAndColumnsTheDatabaseDoesNotHave() {
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("inventroy")
                        .keyColumns("sku")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("table public.inventroy does not exist");
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("inventory")
                        .keyColumns("skuu")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("key column 'skuu' does not exist in public.inventory");
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("inventory")
                        .keyColumns("stock")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("not a unique key");
        assertThatThrownBy(() -> FencedTable.builder()
                        .table("reservation")
                        .keyColumns("id")
                        .build(db.jdbi))
                .isInstanceOf(FencedTableException.class)
                .hasMessageContaining("fence column 'last_fence_token' does not exist in public.reservation")
                .hasMessageContaining("fencing.protect_table");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory).key("A-1").set("stok", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown column 'stok' in public.inventory")
                .hasMessageContaining("[sku, stock, history, updated_by, last_fence_token]");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory).set("last_fence_token", 99))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("set by the writer");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory).where("true; DELETE FROM inventory"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("';', which would end the statement");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory)
                        .key("A-1")
                        .setExpression("stock", "stock - :qty")
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("[qty] are used but not bound");
        assertThatThrownBy(() -> FencedBatch.builder(inventory).columns("stock", "nope"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown column 'nope'");
        assertThat(db.row("A-1")).isEqualTo("10:0");
    }

    /**
     * A batch names each row once: a key added again, as the database compares it (7 and 7L are one bigint
     * key), is refused when it is added. Sent twice in one statement, the UPDATE would write the row once,
     * with the values of either, as the plain batch at the end shows.
     */
    @Test
    void aBatchRefusesAKeyAddedTwiceAsTheDatabaseComparesIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE IF NOT EXISTS counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
            h.execute("SELECT fencing.protect_table('counter')");
            h.execute("TRUNCATE counter");
            h.execute("INSERT INTO counter (id, n) SELECT g, 0 FROM generate_series(1, 3) AS g");
        });
        FencedTable counter =
                FencedTable.builder().table("counter").keyColumns("id").build(db.jdbi);
        FencedBatch.Builder byId = FencedBatch.builder(counter)
                .columns("n")
                .add(5, RowKey.of(7L), 1)
                .add(5, RowKey.of(1L), 1);
        assertThatThrownBy(() -> byId.add(5, RowKey.of(7), 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key 7 is already in this batch");
        assertThatThrownBy(() -> byId.add(6, RowKey.of(1L), 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key 1 is already in this batch");
        FencedBatch.Builder bySku =
                FencedBatch.builder(inventory).columns("stock").add(5, RowKey.of("A-1"), 1);
        assertThatThrownBy(() -> bySku.add(5, RowKey.of("A-1"), 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key A-1 is already in this batch");
        assertThat(byId.add(5, RowKey.of(2), 2).build().keys())
                .containsExactly(RowKey.of(7L), RowKey.of(1L), RowKey.of(2));

        int written = db.jdbi.withHandle(h -> h.execute("UPDATE counter AS t SET n = v.n"
                + " FROM unnest(ARRAY[3, 3], ARRAY[10, 20]) AS v(id, n) WHERE t.id = v.id"));
        assertThat(written).as("one row written for two").isEqualTo(1);
    }

    /**
     * UTF-8 has no encoding for a UTF-16 surrogate without its pair, and the driver sends {@code ?} in its
     * place: the key {@code "A\uD800"} reached the database as {@code "A?"}, and the write applied to row
     * {@code A?}, which the key does not name, and reported it applied.
     */
    @Test
    void aKeyWithAnUnpairedSurrogateIsRefusedNamingItAndNoRowIsWritten() {
        db.reset("A?");
        String unpaired = "A\uD800";

        assertThatThrownBy(() -> writer.tryUpdate(
                        FencedUpdate.builder(inventory)
                                .key(unpaired)
                                .set("stock", 1)
                                .build(),
                        5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired UTF-16 surrogate \\uD800 at index 1")
                .hasMessageContaining("sku");
        assertThatThrownBy(() -> FencedUpsert.builder(inventory).key("\uDC00A"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uDC00 at index 0");
        assertThatThrownBy(() -> FencedBatch.builder(inventory).columns("stock").add(5, RowKey.of(unpaired), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uD800 at index 1");
        assertThatThrownBy(() -> writer.claimAndRun(inventory, RowKey.of(unpaired), 5, h -> null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uD800 at index 1");
        assertThatThrownBy(() -> writer.advanceWatermarkAndRun("report\uD800", 5, h -> null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("resource key")
                .hasMessageContaining("\\uD800 at index 6");
        assertThat(db.row("A?")).isEqualTo("10:0");
        long watermarks = db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM fencing.watermark")
                .mapTo(Long.class)
                .one());
        assertThat(watermarks).isZero();

        // a surrogate with its pair (an emoji) is text like any other
        assertThat(writer.tryUpdate(
                        FencedUpdate.builder(inventory)
                                .key("A\uD83D\uDE00")
                                .set("stock", 1)
                                .build(),
                        5))
                .isEqualTo(new WriteOutcome.NotFound(5));
    }

    /**
     * A value holding a surrogate without its pair was stored with {@code ?} in its place and the write
     * reported applied; bound for a predicate, it compared as that other text.
     */
    @Test
    void aValueWithAnUnpairedSurrogateIsRefusedNamingItsColumnAndNothingIsWritten() {
        String unpaired = "bob\uDC00";

        assertThatThrownBy(() -> FencedUpdate.builder(inventory).key("A-1").set("updated_by", unpaired))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("updated_by")
                .hasMessageContaining("\\uDC00 at index 3");
        assertThatThrownBy(() -> FencedUpdate.builder(inventory).key("A-1").bind("who", unpaired))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'who'")
                .hasMessageContaining("\\uDC00 at index 3");
        assertThatThrownBy(() -> FencedUpsert.builder(inventory).key("A-1").value("updated_by", unpaired))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("updated_by")
                .hasMessageContaining("\\uDC00 at index 3");
        assertThatThrownBy(() -> FencedBatch.builder(inventory)
                        .columns("stock", "updated_by")
                        .add(5, RowKey.of("A-1"), 1, unpaired))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("updated_by")
                .hasMessageContaining("row 0 of the batch")
                .hasMessageContaining("\\uDC00 at index 3");
        assertThat(db.row("A-1")).isEqualTo("10:0");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, Long.MIN_VALUE})
    void refusesTokensThatAreNotPositiveBeforeAnySqlRuns(long token) {
        FencedUpdate update =
                FencedUpdate.builder(inventory).key("A-1").set("stock", 0).build();
        FencedUpsert upsert =
                FencedUpsert.builder(inventory).key("A-2").value("stock", 0).build();
        AtomicBoolean callbackRan = new AtomicBoolean();
        long connectionsBefore = db.connectionsTaken.get();

        assertThatThrownBy(() -> writer.update(update, token))
                .isInstanceOfSatisfying(InvalidFenceTokenException.class, e -> {
                    assertThat(e.token()).isEqualTo(token);
                    assertThat(e.resource()).isEqualTo("public.inventory key A-1");
                })
                .hasMessageContaining("fence token must be > 0, got " + token + " for public.inventory key A-1");
        assertThatThrownBy(() -> writer.tryUpdate(update, token)).isInstanceOf(InvalidFenceTokenException.class);
        assertThatThrownBy(() -> writer.tryUpsert(upsert, token)).isInstanceOf(InvalidFenceTokenException.class);
        assertThatThrownBy(() -> FencedBatch.builder(inventory).columns("stock").add(token, RowKey.of("A-1"), 0))
                .isInstanceOf(InvalidFenceTokenException.class);
        assertThatThrownBy(() -> writer.claimAndRun(inventory, RowKey.of("A-1"), token, h -> {
                    callbackRan.set(true);
                    return h.execute("UPDATE inventory SET stock = 0");
                }))
                .isInstanceOf(InvalidFenceTokenException.class);
        assertThatThrownBy(() -> writer.advanceWatermarkAndRun("report.csv", token, h -> {
                    callbackRan.set(true);
                    return null;
                }))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("fencing.watermark key report.csv");

        assertThat(db.connectionsTaken.get()).as("no connection was taken").isEqualTo(connectionsBefore);
        assertThat(callbackRan).isFalse();
        assertThat(db.row("A-1")).isEqualTo("10:0");
        assertThat(db.row("A-2")).isNull();
    }
}
