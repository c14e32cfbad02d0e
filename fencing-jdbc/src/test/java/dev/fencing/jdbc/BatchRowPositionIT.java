package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.InvalidFenceTokenException;
import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A row a batch refuses is named by its position, as added: in a batch of thousands of rows, a message that
 * names only the bad value leaves the caller searching for it. Each kind of refusal, at the third row added.
 */
class BatchRowPositionIT {
    private static final String THIRD_ROW = "row 2 of the batch (0-based, in the order added)";

    static FencingDatabase db;
    static FencedTable inventory;
    /** Keyed by one column of each checked kind: a numeric(5,2), a timestamp(3) and a boolean. */
    static FencedTable slots;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("batch_row_position_it", 2);
        inventory = db.inventory();
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE slots (amount NUMERIC(5,2), starts TIMESTAMP(3), open BOOLEAN,"
                    + " label TEXT, PRIMARY KEY (amount, starts, open))");
            h.execute("SELECT fencing.protect_table('slots')");
        });
        slots = FencedTable.builder()
                .table("slots")
                .keyColumns("amount", "starts", "open")
                .build(db.jdbi);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    private static FencedBatch.Builder twoInventoryRows() {
        return FencedBatch.builder(inventory)
                .columns("stock")
                .add(5, RowKey.of("A-1"), 1)
                .add(5, RowKey.of("A-2"), 2);
    }

    private static FencedBatch.Builder twoSlotRows() {
        LocalDateTime starts = LocalDateTime.of(2026, 1, 1, 10, 0);
        return FencedBatch.builder(slots)
                .columns("label")
                .add(5, RowKey.of(new BigDecimal("1.00"), starts, true), "a")
                .add(5, RowKey.of(new BigDecimal("2.00"), starts, true), "b");
    }

    @Test
    void aNullKeyOrNullValuesAreRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(5, null, 3))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining(THIRD_ROW);
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A-3"), (Object[]) null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining(THIRD_ROW)
                .hasMessageContaining("A-3");
    }

    @Test
    void aTokenThatIsNotPositiveIsRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(0, RowKey.of("A-3"), 3))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("got 0")
                .hasMessageContaining("A-3")
                .hasMessageContaining(THIRD_ROW);
    }

    @Test
    void aKeyOfTheWrongSizeIsRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A-3", "x"), 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("A-3")
                .hasMessageContaining(THIRD_ROW);
    }

    @Test
    void aKeyWithAnUnpairedSurrogateIsRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A\uD800"), 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uD800")
                .hasMessageContaining(THIRD_ROW);
    }

    @Test
    void eachKindOfKeyTheCastWouldRoundIsRefusedNamingTheRow() {
        LocalDateTime starts = LocalDateTime.of(2026, 1, 1, 10, 0);
        List<Function<FencedBatch.Builder, FencedBatch.Builder>> badThirdRows = List.of(
                // more decimals than numeric(5,2) keeps
                b -> b.add(5, RowKey.of(new BigDecimal("3.001"), starts, true), "c"),
                b -> b.add(5, RowKey.of("3.001", starts, true), "c"),
                // finer than timestamp(3) keeps
                b -> b.add(5, RowKey.of(new BigDecimal("3.00"), starts.plusNanos(1_000), true), "c"),
                b -> b.add(5, RowKey.of(new BigDecimal("3.00"), "2026-01-01 10:00:00.0001", true), "c"),
                // a moment for a local time, a floating-point number, a number for a boolean
                b -> b.add(5, RowKey.of(new BigDecimal("3.00"), OffsetDateTime.of(starts, ZoneOffset.UTC), true), "c"),
                b -> b.add(5, RowKey.of(3.0, starts, true), "c"),
                b -> b.add(5, RowKey.of(new BigDecimal("3.00"), starts, 1), "c"));
        for (Function<FencedBatch.Builder, FencedBatch.Builder> badThirdRow : badThirdRows) {
            assertThatThrownBy(() -> badThirdRow.apply(twoSlotRows()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(THIRD_ROW);
        }
    }

    @Test
    void theWrongNumberOfValuesOrAValueThatCannotTravelIsRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A-3"), 3, 4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("A-3")
                .hasMessageContaining(THIRD_ROW);
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A-3"), new Object()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot be sent as text")
                .hasMessageContaining("stock")
                .hasMessageContaining(THIRD_ROW);
    }

    @Test
    void aKeyAlreadyInTheBatchIsRefusedNamingTheRow() {
        assertThatThrownBy(() -> twoInventoryRows().add(5, RowKey.of("A-1"), 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key A-1")
                .hasMessageContaining(THIRD_ROW);
    }

    /**
     * A value the statement's cast to its column's type refuses fails the whole batch; PostgreSQL's error
     * quotes the value but says nothing of the row or column it came from.
     */
    @Test
    void aValueTheColumnCannotReadIsRefusedWhenRunNamingTheRowAndColumn() {
        db.reset("A-1", "A-2", "A-3");
        FencedBatch batch = twoInventoryRows().add(5, RowKey.of("A-3"), "3x").build();

        assertThatThrownBy(() -> FencedWriter.builder(db.jdbi).build().tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("\"3x\"")
                .hasMessageContaining("column stock")
                .hasMessageContaining(THIRD_ROW);
        assertThatThrownBy(() -> db.jdbi.useTransaction(
                        h -> FencedWriter.builder(db.jdbi).build().tryBatch(h, batch)))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining(THIRD_ROW);
        assertThat(db.row("A-1")).isEqualTo("10:0");
        assertThat(db.row("A-3")).isEqualTo("10:0");

        // the same text as an earlier row's text key, which any text reads as, is not what failed
        FencedBatch sameText = FencedBatch.builder(inventory)
                .columns("stock")
                .add(5, RowKey.of("3x"), 1)
                .add(5, RowKey.of("A-2"), 2)
                .add(5, RowKey.of("A-3"), "3x")
                .build();
        assertThatThrownBy(() -> FencedWriter.builder(db.jdbi).build().tryBatch(sameText))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("column stock")
                .hasMessageContaining(THIRD_ROW);
    }

    /**
     * A whole number outside its column's range travels in the batch's {@code bigint[]} like any other, and
     * PostgreSQL's error ({@code integer out of range}, {@code smallint out of range}) quotes no value: the batch
     * failed naming neither the row, nor the column, nor the value, among thousands.
     */
    @Test
    void aWholeNumberOutsideItsColumnsRangeIsRefusedWhenRunNamingTheRowColumnAndValue() {
        db.reset("A-1", "A-2", "A-3");
        FencedBatch batch =
                twoInventoryRows().add(5, RowKey.of("A-3"), 3_000_000_000L).build();

        assertThatThrownBy(() -> FencedWriter.builder(db.jdbi).build().tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("3000000000")
                .hasMessageContaining("column stock")
                .hasMessageContaining(THIRD_ROW);
        assertThat(db.row("A-1")).isEqualTo("10:0");
        assertThat(db.row("A-3")).isEqualTo("10:0");

        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE bins (id SMALLINT PRIMARY KEY, n INTEGER NOT NULL)");
            h.execute("SELECT fencing.protect_table('bins')");
            h.execute("INSERT INTO bins (id, n) VALUES (1, 0), (2, 0)");
        });
        FencedTable bins = FencedTable.builder().table("bins").keyColumns("id").build(db.jdbi);
        FencedBatch keys = FencedBatch.builder(bins)
                .columns("n")
                .add(5, RowKey.of(1L), 1)
                .add(5, RowKey.of(2), 40_000)
                .add(5, RowKey.of(-40_000L), 1)
                .build();
        assertThatThrownBy(() -> FencedWriter.builder(db.jdbi).build().tryBatch(keys))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("-40000")
                .hasMessageContaining("column id")
                .hasMessageContaining(THIRD_ROW);
        long written = db.jdbi.withHandle(
                h -> h.createQuery("SELECT sum(n) FROM bins").mapTo(Long.class).one());
        assertThat(written).isZero();
    }

    /** Given as 7L and as '7', two keys the builder tells apart and the database reads as one: found when run. */
    @Test
    void aKeyTheDatabaseReadsAsAnotherRowsIsRefusedWhenRunNamingTheRow() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
            h.execute("SELECT fencing.protect_table('counter')");
            h.execute("INSERT INTO counter (id, n) SELECT g, 0 FROM generate_series(1, 9) AS g");
        });
        FencedTable counter =
                FencedTable.builder().table("counter").keyColumns("id").build(db.jdbi);
        FencedBatch batch = FencedBatch.builder(counter)
                .columns("n")
                .add(5, RowKey.of(1L), 1)
                .add(5, RowKey.of(7L), 1)
                .add(5, RowKey.of("7"), 1)
                .build();

        assertThatThrownBy(() -> FencedWriter.builder(db.jdbi).build().tryBatch(batch))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("(0-based, in the order added)");
        long written = db.jdbi.withHandle(h ->
                h.createQuery("SELECT sum(n) FROM counter").mapTo(Long.class).one());
        assertThat(written).isZero();
    }
}
