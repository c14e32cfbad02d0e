package dev.fencing.kafka;

import dev.fencing.jdbc.FencedTable;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * A record's effect as a fenced update of its key's row in a protected table: the answer to "how should a
 * handler write a row of a protected table?". The row's fence column ({@code last_fence_token}, added by the
 * fencing-db module's {@code fencing.protect_table(...)}) is then the key's watermark: no second row per record.
 *
 * <p>What it guarantees, with {@link FencedConsumerBuilder#fencedRowHandler}:
 *
 * <ul>
 *   <li>Each accepted record sets the chosen columns of the row its key maps to, and the fence column to the
 *       record's token, only if the stored token is not higher (the consumer's default policy, {@code
 *       monotonic}) or lower ({@code fencing.policy=strict}): the check and the write are one statement. A unit's updates go to
 *       PostgreSQL in the unit's transaction, with the unit's offsets, in segments in record order that name
 *       each row once: a segment of many rows whose values reach their columns through a batch as they would
 *       bound one by one (strings into text columns, whole numbers, booleans, UUIDs) as one fenced batch
 *       statement ({@link dev.fencing.jdbc.FencedBatch}), any other segment (floating-point numbers, dates and
 *       times...) as single-row updates in one JDBC batch, which is also what a batch statement that failed
 *       falls back to: the two ways give the same answers. A unit ends once it holds 32 segments, so that no
 *       row takes more than that many updates in one transaction (but for one poll's records of one key).
 *   <li>A record whose update the row refuses (another writer, a fencing-jdbc one or another consumer group, wrote
 *       the row under a newer token since the consumer read it) is stale: it is dead-lettered (or dropped, with
 *       {@link StaleRecordPolicy#DROP}) like a record the consumer's own fence refused, its dead letter is
 *       acknowledged before the unit commits, and its offset is committed with the unit, once.
 *   <li>No watermark row is written for a key whose row took (or refused) its records; a key's watermark, when
 *       the consumer reads it, is the greater of its row's token and any watermark stored for it in {@code
 *       fencing.kafka_watermark} (for example from before the switch to this handler).
 *   <li>{@link Builder#build()} refuses what it cannot fence: a table without the guard trigger, a key of
 *       more than one column (a record key maps to one row through one key column, which {@link FencedTable}
 *       checked is unique), key columns of a type whose text form could name another row, the fence or key
 *       column among the columns set. A record whose row key is null or names no row stops the consumer
 *       ({@link RecordHandlingException}); its unit is rolled back.
 * </ul>
 *
 * <pre>{@code
 * // CREATE TABLE stock_level (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL);
 * // SELECT fencing.protect_table('stock_level');
 * FencedTable stockLevel =
 *         FencedTable.builder().table("stock_level").keyColumns("sku").build(jdbi);
 * FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stockLevel)
 *         .columns("quantity")
 *         .values(record -> new Object[] {Long.parseLong(record.value())})
 *         .build();
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(
 *                 new StringDeserializer(), new StringDeserializer())
 *         .properties(config)
 *         .topics("stock-levels")
 *         .fencedRowHandler(PostgresWatermarkStore.create(jdbi), rows)
 *         .build();
 * }</pre>
 *
 * <p>The serial consumer only ({@code maxConcurrency} 1); the key-parallel one refuses it at build. Immutable
 * and thread-safe if its functions are.
 *
 * @param <K> the record key's type
 * @param <V> the record value's type
 */
public final class FencedRowHandler<K, V> {
    /** Key column types whose text form names exactly one value. */
    private static final Set<String> KEY_TYPES =
            Set.of("text", "character varying", "bigint", "integer", "smallint", "uuid");

    /** The row keys' types whose text is what PostgreSQL makes of them bound: see {@link #rowKey}. */
    private static final Set<Class<?>> ROW_KEY_CLASSES =
            Set.of(String.class, Long.class, Integer.class, Short.class, UUID.class);

    private final FencedTable table;
    private final List<String> columns;
    private final Function<? super K, ?> rowKey;
    private final Function<? super ConsumerRecord<K, V>, Object[]> values;

    private FencedRowHandler(Builder<K, V> builder) {
        this.table = builder.table;
        this.columns = builder.columns;
        this.rowKey = builder.rowKey;
        this.values = builder.values;
    }

    public static <K, V> Builder<K, V> builder(FencedTable table) {
        return new Builder<>(Objects.requireNonNull(table, "table"));
    }

    public FencedTable table() {
        return table;
    }

    /** The key column: the table's one key column. */
    public String keyColumn() {
        return table.keyColumns().get(0);
    }

    /** The columns each record sets, in the order {@link #values} gives them. */
    public List<String> columns() {
        return columns;
    }

    /**
     * The value of the key column for a record key; null if it maps to none.
     *
     * @throws IllegalArgumentException naming the value if it is not a {@link String}, {@link Long}, {@link
     *     Integer}, {@link Short} or {@link UUID}: the consumer names a row by the value's text when it reads the
     *     row's token and binds the value itself when it updates the row, and for another type the two can name
     *     different rows (a {@code Double} 1000.0 reads as "1000.0" but binds as 1000)
     */
    public Object rowKey(K key) {
        Object row = rowKey.apply(key);
        if (row == null || ROW_KEY_CLASSES.contains(row.getClass())) {
            return row;
        }
        throw new IllegalArgumentException("the rowKey function gave " + row + " ("
                + row.getClass().getName()
                + ") for key " + key + "; a row key of " + table.qualifiedName() + " is a String, Long, Integer,"
                + " Short or UUID");
    }

    /**
     * The record's values for {@link #columns()}, one each.
     *
     * @throws IllegalArgumentException naming the record if the function gave a different number
     */
    public Object[] values(ConsumerRecord<K, V> record) {
        Object[] given = values.apply(record);
        if (given == null || given.length != columns.size()) {
            throw new IllegalArgumentException("the values function gave "
                    + (given == null ? "null" : given.length + " values") + " for " + record.topic() + "-"
                    + record.partition() + "@" + record.offset() + "; columns " + columns + " take "
                    + columns.size());
        }
        return given;
    }

    @Override
    public String toString() {
        return "FencedRowHandler[" + table.qualifiedName() + " key " + keyColumn() + " sets " + columns + "]";
    }

    /** Chooses the columns, the values and the key mapping; {@link #build()} checks them against the table. */
    public static final class Builder<K, V> {
        private final FencedTable table;
        private List<String> columns;
        private Function<? super K, ?> rowKey = key -> key;
        private Function<? super ConsumerRecord<K, V>, Object[]> values;

        private Builder(FencedTable table) {
            this.table = table;
        }

        /**
         * The columns each record sets. At least one; not the fence column (the handler sets it to the
         * record's token), not the key column.
         *
         * @throws IllegalArgumentException naming a column that is unknown, the fence or key column, or twice
         */
        public Builder<K, V> columns(String... columns) {
            Objects.requireNonNull(columns, "columns");
            if (columns.length == 0) {
                throw new IllegalArgumentException("a fenced row handler sets at least one column");
            }
            Set<String> seen = new HashSet<>();
            for (String column : columns) {
                table.requireColumn("column", column);
                if (column.equals(table.fenceColumn())) {
                    throw new IllegalArgumentException("the fence column '" + column + "' of " + table.qualifiedName()
                            + " is set to each record's token by the handler, not by you");
                }
                if (table.keyColumns().contains(column)) {
                    throw new IllegalArgumentException("key column '" + column + "' of " + table.qualifiedName()
                            + " names the row; a record cannot change it");
                }
                if (!seen.add(column)) {
                    throw new IllegalArgumentException("column '" + column + "' is named twice");
                }
            }
            this.columns = List.of(columns);
            return this;
        }

        /** The values of {@link #columns} for a record, in that order; must give exactly one per column. */
        public Builder<K, V> values(Function<? super ConsumerRecord<K, V>, Object[]> values) {
            this.values = Objects.requireNonNull(values, "values");
            return this;
        }

        /**
         * The key column's value for a record key. Default: the record key itself. Must be a function of the
         * key alone: the consumer also applies it to the keys whose watermarks it loads.
         */
        public Builder<K, V> rowKey(Function<? super K, ?> rowKey) {
            this.rowKey = Objects.requireNonNull(rowKey, "rowKey");
            return this;
        }

        /**
         * @throws IllegalArgumentException naming the table, column or type that cannot be fenced
         * @throws IllegalStateException if columns or values were not given
         */
        public FencedRowHandler<K, V> build() {
            if (columns == null || values == null) {
                throw new IllegalStateException("columns(...) and values(...) are required");
            }
            if (!table.guarded()) {
                throw new IllegalArgumentException("table " + table.qualifiedName() + " has no fencing_guard trigger:"
                        + " writers that bypass the handler could lower " + table.fenceColumn() + " unnoticed."
                        + " Protect it first: SELECT fencing.protect_table('" + table.qualifiedName() + "')");
            }
            if (table.keyColumns().size() != 1) {
                throw new IllegalArgumentException("table " + table.qualifiedName() + " is keyed by "
                        + table.keyColumns() + ": a fenced row handler maps each record key to one row through"
                        + " one key column; give the table (or a unique one-column key of it) to FencedTable");
            }
            String keyColumn = table.keyColumns().get(0);
            String type = table.columnType(keyColumn).orElse("unknown").toLowerCase(Locale.ROOT);
            // FencedTable reads types without their modifiers (varchar(20) is "character varying"): an exact
            // match, as a prefix would also take "character varying[]"
            if (!KEY_TYPES.contains(type)) {
                throw new IllegalArgumentException("key column '" + keyColumn + "' of " + table.qualifiedName()
                        + " has type " + type + ": a fenced row handler matches rows to record keys by their text"
                        + " form, which only text, varchar, bigint, integer, smallint and uuid keys give one to one");
            }
            return new FencedRowHandler<>(this);
        }
    }
}
