package dev.fencing.jdbc;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The values of a row's key columns, in the order the {@link FencedTable} names them. Immutable.
 *
 * <pre>{@code
 * RowKey.of("A-1");                 // table keyed by sku
 * RowKey.of(tenantId, accountId);  // composite key
 * }</pre>
 */
public final class RowKey {
    private final List<Object> values;

    private RowKey(List<Object> values) {
        this.values = values;
    }

    /** @throws IllegalArgumentException if no value or a {@code null} value is given */
    public static RowKey of(Object... values) {
        Objects.requireNonNull(values, "values");
        if (values.length == 0) {
            throw new IllegalArgumentException("a row key needs at least one value");
        }
        for (int i = 0; i < values.length; i++) {
            if (values[i] == null) {
                throw new IllegalArgumentException("key value " + i + " is null in " + Arrays.toString(values));
            }
        }
        return new RowKey(List.of(values));
    }

    public List<Object> values() {
        return values;
    }

    public int size() {
        return values.size();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RowKey && ((RowKey) o).values.equals(values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return values.size() == 1 ? String.valueOf(values.get(0)) : values.toString();
    }
}
