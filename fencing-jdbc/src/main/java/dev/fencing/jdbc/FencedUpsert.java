package dev.fencing.jdbc;

import dev.fencing.jdbc.internal.Utf8Text;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A fenced insert-or-update of one row that may not exist yet: {@code INSERT ... ON CONFLICT (key) DO
 * UPDATE ... WHERE last_fence_token < :token}. A missing row is inserted with the token; an existing row
 * is updated only if the policy admits the token; otherwise the outcome is {@link WriteOutcome.Rejected}.
 *
 * <pre>{@code
 * FencedUpsert price = FencedUpsert.builder(prices)
 *         .key(RowKey.of("A-1"))
 *         .value("cents", 1299)
 *         .value("currency", "EUR")
 *         .build();
 * writer.upsert(price, lease.token());
 * }</pre>
 *
 * The given values are inserted, or on conflict overwrite the stored ones; columns not named keep their
 * defaults on insert and their values on update. The table needs a unique key on exactly its key columns,
 * which its {@code ON CONFLICT} names ({@link FencedTable#requireUpsertable}). On conflict the stored token is
 * compared with the offered token itself, whatever a BEFORE INSERT trigger of the table made of the proposed
 * row's fence column; such a trigger does change the token a new row is inserted with, which the writer cannot
 * see: leave the fence column to the writer. Immutable and thread-safe.
 */
public final class FencedUpsert {
    private final FencedTable table;
    private final RowKey key;
    private final Map<String, Object> values;

    private FencedUpsert(FencedTable table, RowKey key, Map<String, Object> values) {
        this.table = table;
        this.key = key;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    public static Builder builder(FencedTable table) {
        return new Builder(Objects.requireNonNull(table, "table"));
    }

    public FencedTable table() {
        return table;
    }

    public RowKey key() {
        return key;
    }

    /** Column to value, in the order given. */
    public Map<String, Object> values() {
        return values;
    }

    @Override
    public String toString() {
        return "UPSERT " + table.qualifiedName() + " key " + key + " columns " + values.keySet();
    }

    /** Builds a {@link FencedUpsert}; every setter checks its value against the table. */
    public static final class Builder {
        private final FencedTable table;
        private RowKey key;
        private final Map<String, Object> values = new LinkedHashMap<>();

        private Builder(FencedTable table) {
            this.table = table;
        }

        public Builder key(RowKey key) {
            this.key = table.requireKey(key);
            return this;
        }

        public Builder key(Object... values) {
            return key(RowKey.of(values));
        }

        /** A column's value for the insert and for the update; cast to the column's type. */
        public Builder value(String column, Object value) {
            table.requireColumn("column", column);
            if (column.equals(table.fenceColumn())) {
                throw new IllegalArgumentException(
                        "the fence column '" + column + "' is set by the writer, not by you");
            }
            if (table.keyColumns().contains(column)) {
                throw new IllegalArgumentException("key column '" + column + "' is given by key(...)");
            }
            if (values.containsKey(column)) {
                throw new IllegalArgumentException("column '" + column + "' is given twice");
            }
            if (value instanceof CharSequence text) {
                Utf8Text.requireEncodable(text, "the value for column " + column + " of " + table.qualifiedName());
            }
            values.put(column, value);
            return this;
        }

        public FencedUpsert build() {
            if (key == null) {
                throw new IllegalStateException("no key: call key(...)");
            }
            table.requireUpsertable();
            return new FencedUpsert(table, key, values);
        }
    }
}
