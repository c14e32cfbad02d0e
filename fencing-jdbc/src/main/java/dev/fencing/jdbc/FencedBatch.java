package dev.fencing.jdbc;

import dev.fencing.FenceTokens;
import dev.fencing.InvalidFenceTokenException;
import dev.fencing.jdbc.internal.BatchValues;
import dev.fencing.jdbc.internal.LongSet;
import dev.fencing.jdbc.internal.Utf8Text;
import java.util.AbstractList;
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
 * FencedBatch batch = FencedBatch.builder(inventory).columns("stock")
 *         .add(token, RowKey.of("A-1"), 10)
 *         .add(token, RowKey.of("A-2"), 7)
 *         .build();
 * List<WriteOutcome> outcomes = writer.tryBatch(batch); // some may be Rejected or NotFound
 * writer.batch(batch);                                  // or all or nothing: throws unless every row applies
 * }</pre>
 *
 * Each column travels as one array: {@code bigint[]} when all its values are whole numbers ({@code
 * Long}, {@code Integer}...), otherwise {@code text[]}; the statement casts it to the column's type. So
 * values must be of a type whose {@code toString()} PostgreSQL reads back: {@link CharSequence}, {@link
 * Number}, {@link Boolean}, {@code UUID}, {@code java.time} values, enums (by name), or {@code null}. A key
 * may appear only once per batch. Immutable and thread-safe; its {@link Builder} is not thread-safe.
 */
public final class FencedBatch {
    private final FencedTable table;
    private final List<String> columns;
    private final long[] tokens;
    private final boolean oneToken;
    private final List<RowKey> keys;
    private final List<List<Object>> keyValues;
    private final List<List<Object>> values;

    private FencedBatch(Builder builder) {
        this.table = builder.table;
        this.columns = builder.columns;
        this.tokens = Arrays.copyOf(builder.tokens, builder.keys.size());
        this.oneToken = builder.oneToken;
        this.keys = List.copyOf(builder.keys);
        this.keyValues = frozen(builder.keyValues);
        this.values = frozen(builder.values);
    }

    /** Copies that may hold nulls (a value may be SQL NULL), unmodifiable. */
    private static List<List<Object>> frozen(List<List<Object>> columns) {
        List<List<Object>> copy = new ArrayList<>(columns.size());
        for (List<Object> column : columns) {
            copy.add(Collections.unmodifiableList(Arrays.asList(column.toArray())));
        }
        return Collections.unmodifiableList(copy);
    }

    public static Builder builder(FencedTable table) {
        return new Builder(Objects.requireNonNull(table, "table"));
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

    /** The rows' keys, in the order they were added. */
    public List<RowKey> keys() {
        return keys;
    }

    /** The rows' tokens, in the order they were added. */
    public List<Long> tokens() {
        return new AbstractList<>() {
            @Override
            public Long get(int row) {
                return tokens[row];
            }

            @Override
            public int size() {
                return tokens.length;
            }
        };
    }

    /** The token of row {@code row} (0-based, in the order rows were added). */
    public long token(int row) {
        return tokens[row];
    }

    /** Whether every row has the same token (the usual batch: one lock holder's). */
    public boolean hasOneToken() {
        return oneToken;
    }

    /** The values of key column {@code i} for every row, in row order. */
    public List<Object> keyValues(int i) {
        return keyValues.get(i);
    }

    /** The values of column {@code i} for every row, in row order. */
    public List<Object> values(int i) {
        return values.get(i);
    }

    /** Chooses the columns every row sets, then takes the rows one by one; every call checks its input. */
    public static final class Builder {
        private final FencedTable table;
        private List<String> columns;
        private long[] tokens = new long[16];
        private boolean oneToken = true;
        private final List<RowKey> keys = new ArrayList<>();
        private final List<List<Object>> keyValues = new ArrayList<>();
        private final List<List<Object>> values = new ArrayList<>();
        private final Set<Object> seenKeys = new HashSet<>();
        /** Single whole-number keys, the common case, kept without boxes (a batch holds thousands). */
        private final LongSet seenIntegralKeys = new LongSet();

        private Builder(FencedTable table) {
            this.table = table;
            for (int i = 0; i < table.keyColumns().size(); i++) {
                keyValues.add(new ArrayList<>());
            }
        }

        /**
         * The columns each row sets, in the order {@link #add} takes values. Called once, before any row.
         *
         * @throws IllegalArgumentException naming a column that is unknown, the fence column, a key column
         *     or named twice
         */
        public Builder columns(String... columns) {
            Objects.requireNonNull(columns, "columns");
            if (this.columns != null) {
                throw new IllegalStateException("columns are already set to " + this.columns);
            }
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
            for (int i = 0; i < columns.length; i++) {
                values.add(new ArrayList<>());
            }
            return this;
        }

        /**
         * Adds one row: its key, the token it is written under, and one value per column in the order given
         * to {@link #columns}.
         *
         * <p>Every refusal names the row by its position: {@code row 1234 of the batch (0-based, in the order
         * added)}, the index that {@link FencedBatch#token(int)} and the outcomes use.
         *
         * @throws InvalidFenceTokenException if {@code token <= 0}
         * @throws IllegalArgumentException on a key {@link FencedTable#requireKey} refuses, a wrong number of
         *     values, an unsupported value type, or a key already in the batch
         * @throws NullPointerException when the key or the values array is null
         * @throws IllegalStateException when {@link #columns} was not called first
         */
        public Builder add(long token, RowKey key, Object... rowValues) {
            int row = keys.size();
            if (key == null) {
                throw new NullPointerException("the key of " + BatchValues.rowName(row) + " is null");
            }
            if (rowValues == null) {
                throw new NullPointerException(
                        "the values of " + BatchValues.rowName(row) + " (key " + key + ") are null");
            }
            if (columns == null) {
                throw new IllegalStateException("no columns: call columns(...) before adding rows");
            }
            if (token <= 0) {
                // the message only when it is needed: building it for every row cost more than the rest of add
                FenceTokens.requirePositive(
                        token, table.qualifiedName() + " key " + key + " in " + BatchValues.rowName(row));
            }
            try {
                table.requireKey(key);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(BatchValues.rowName(row) + ": " + e.getMessage(), e);
            }
            if (rowValues.length != columns.size()) {
                throw new IllegalArgumentException(BatchValues.rowName(row) + " (key " + key + ") has "
                        + rowValues.length + " values for columns " + columns + ": " + Arrays.toString(rowValues));
            }
            for (int i = 0; i < rowValues.length; i++) {
                if (!BatchValues.integral(rowValues[i])) {
                    try {
                        BatchValues.text(rowValues[i]); // refuses a type that cannot travel
                        if (rowValues[i] instanceof CharSequence text) {
                            Utf8Text.requireEncodable(text, "the value");
                        }
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException(
                                BatchValues.rowName(row) + " (key " + key + "), column " + columns.get(i) + ": "
                                        + e.getMessage(),
                                e);
                    }
                }
            }
            if (!(key.size() == 1 && BatchValues.integral(key.values().get(0))
                    ? seenIntegralKeys.add(((Number) key.values().get(0)).longValue())
                    : seenKeys.add(identity(key)))) {
                throw new IllegalArgumentException(
                        "key " + key + " is already in this batch; " + BatchValues.rowName(row) + " gives it again");
            }
            for (int i = 0; i < key.size(); i++) {
                keyValues.get(i).add(table.batchKeyValue(i, key.values().get(i)));
            }
            for (int i = 0; i < rowValues.length; i++) {
                values.get(i).add(rowValues[i]);
            }
            if (row == tokens.length) {
                tokens = Arrays.copyOf(tokens, row * 2);
            }
            tokens[row] = token;
            oneToken &= row == 0 || token == tokens[0];
            keys.add(key);
            return this;
        }

        /**
         * A key that is not a single whole number as the database compares it (a single whole number is
         * compared as a {@code long}, so that 7 and 7L count as the same row).
         */
        private static Object identity(RowKey key) {
            if (key.size() == 1) {
                return BatchValues.text(key.values().get(0));
            }
            List<String> keyText = new ArrayList<>(key.size());
            for (Object value : key.values()) {
                keyText.add(BatchValues.text(value));
            }
            return keyText;
        }

        /**
         * The immutable batch of the rows added so far (possibly none); the builder may go on to build a
         * larger one.
         *
         * @throws IllegalStateException when {@link #columns} was not called
         */
        public FencedBatch build() {
            if (columns == null) {
                throw new IllegalStateException("no columns: call columns(...)");
            }
            return new FencedBatch(this);
        }
    }
}
