package dev.fencing.jdbc;

import dev.fencing.FenceTokens;
import dev.fencing.InvalidFenceTokenException;
import dev.fencing.jdbc.internal.BatchValues;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Many fenced row updates sent as ONE statement (one round trip): each row has its own key, token and
 * values for the same columns, and each is applied only if the policy admits its token, exactly as if it
 * were a single {@link FencedUpdate}. The outcomes come back in the order the rows were added.
 *
 * <pre>{@code
 * FencedBatch batch = FencedBatch.builder(inventory).columns("stock").build()
 *         .add(token, RowKey.of("A-1"), 10)
 *         .add(token, RowKey.of("A-2"), 7);
 * List<WriteOutcome> outcomes = writer.tryBatch(batch); // some may be Rejected or NotFound
 * writer.batch(batch);                                  // all or nothing: rolls back unless all apply
 * }</pre>
 *
 * Each column travels as one array: {@code bigint[]} when all its values are whole numbers ({@code
 * Long}, {@code Integer}...), otherwise {@code text[]}; the statement casts it to the column's type. So
 * values must be of a type whose {@code toString()} PostgreSQL reads back: {@link CharSequence}, {@link Number}, {@link
 * Boolean}, {@code UUID}, {@code java.time} values, enums (by name), or {@code null}. A key may appear
 * only once per batch. Not thread-safe while rows are added; hand it to one writer call at a time.
 */
public final class FencedBatch {
    private final FencedTable table;
    private final List<String> columns;
    private final List<Long> tokens = new ArrayList<>();
    private final List<RowKey> keys = new ArrayList<>();
    private final List<List<Object>> keyValues;
    private final List<List<Object>> values;
    private final Set<Object> seenKeys = new HashSet<>();

    private FencedBatch(FencedTable table, List<String> columns) {
        this.table = table;
        this.columns = List.copyOf(columns);
        this.keyValues = new ArrayList<>();
        for (int i = 0; i < table.keyColumns().size(); i++) {
            keyValues.add(new ArrayList<>());
        }
        this.values = new ArrayList<>();
        for (int i = 0; i < columns.size(); i++) {
            values.add(new ArrayList<>());
        }
    }

    public static Builder builder(FencedTable table) {
        return new Builder(Objects.requireNonNull(table, "table"));
    }

    /**
     * Adds one row: its key, the token it is written under, and one value per column in the order given
     * to {@link Builder#columns}.
     *
     * @throws InvalidFenceTokenException if {@code token <= 0}
     * @throws IllegalArgumentException on a wrong number of values, an unsupported value type, or a key
     *     already in the batch
     */
    public FencedBatch add(long token, RowKey key, Object... values) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(values, "values");
        FenceTokens.requirePositive(token, table.qualifiedName() + " key " + key);
        table.requireKey(key);
        if (values.length != columns.size()) {
            throw new IllegalArgumentException("row " + key + " has " + values.length + " values for columns " + columns
                    + ": " + Arrays.toString(values));
        }
        for (Object value : values) {
            if (!BatchValues.integral(value)) {
                BatchValues.text(value); // refuses a type that cannot travel
            }
        }
        Object identity;
        if (key.size() == 1) {
            Object value = key.values().get(0);
            identity = BatchValues.integral(value) ? (Object) ((Number) value).longValue() : BatchValues.text(value);
        } else {
            List<String> keyText = new ArrayList<>(key.size());
            for (Object value : key.values()) {
                keyText.add(BatchValues.text(value));
            }
            identity = keyText;
        }
        if (!seenKeys.add(identity)) {
            throw new IllegalArgumentException("key " + key + " is already in this batch");
        }
        for (int i = 0; i < key.size(); i++) {
            keyValues.get(i).add(key.values().get(i));
        }
        for (int i = 0; i < values.length; i++) {
            this.values.get(i).add(values[i]);
        }
        tokens.add(token);
        keys.add(key);
        return this;
    }

    public FencedTable table() {
        return table;
    }

    public List<String> columns() {
        return columns;
    }

    public int size() {
        return keys.size();
    }

    public List<RowKey> keys() {
        return Collections.unmodifiableList(keys);
    }

    public List<Long> tokens() {
        return Collections.unmodifiableList(tokens);
    }

    /** The values of key column {@code i} for every row, in row order. */
    public List<Object> keyValues(int i) {
        return Collections.unmodifiableList(keyValues.get(i));
    }

    /** The values of column {@code i} for every row, in row order. */
    public List<Object> values(int i) {
        return Collections.unmodifiableList(values.get(i));
    }

    /** Chooses the columns every row of the batch sets. */
    public static final class Builder {
        private final FencedTable table;
        private List<String> columns;

        private Builder(FencedTable table) {
            this.table = table;
        }

        /** The columns each row sets, in the order {@link FencedBatch#add} takes values. */
        public Builder columns(String... columns) {
            Objects.requireNonNull(columns, "columns");
            if (columns.length == 0) {
                throw new IllegalArgumentException("a batch sets at least one column");
            }
            Set<String> seen = new HashSet<>();
            for (String column : columns) {
                table.requireColumn("column", column);
                if (column.equals(table.fenceColumn())) {
                    throw new IllegalArgumentException(
                            "the fence column '" + column + "' is set by the writer, not by you");
                }
                if (table.keyColumns().contains(column)) {
                    throw new IllegalArgumentException("key column '" + column + "' cannot be changed by a batch");
                }
                if (!seen.add(column)) {
                    throw new IllegalArgumentException("column '" + column + "' is named twice");
                }
            }
            this.columns = List.of(columns);
            return this;
        }

        /** An empty batch; add rows with {@link FencedBatch#add}. */
        public FencedBatch build() {
            if (columns == null) {
                throw new IllegalStateException("no columns: call columns(...)");
            }
            return new FencedBatch(table, columns);
        }
    }
}
