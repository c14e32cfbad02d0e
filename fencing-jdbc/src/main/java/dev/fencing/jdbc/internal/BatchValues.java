package dev.fencing.jdbc.internal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.ZonedDateTime;
import java.time.temporal.TemporalAccessor;
import java.util.List;
import java.util.UUID;

/**
 * How a batch column travels: as a {@code bigint[]} when every value is a whole number (the common key
 * and counter case; no text round trip), otherwise as a {@code text[]} of values PostgreSQL can read
 * back; either way cast once to an array of the column's type in the statement.
 */
public final class BatchValues {
    private BatchValues() {}

    /** How messages name the batch row at index {@code row}: by its position as the rows were added. */
    public static String rowName(int row) {
        return "row " + row + " of the batch (0-based, in the order added)";
    }

    /** @throws IllegalArgumentException for a type that cannot travel as text */
    public static String text(Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof ZonedDateTime) {
            // PostgreSQL reads the offset but not the [Region/City] suffix of ZonedDateTime.toString()
            return ((ZonedDateTime) value).toOffsetDateTime().toString();
        }
        if (value instanceof CharSequence
                || value instanceof Boolean
                || value instanceof UUID
                || value instanceof TemporalAccessor
                || value instanceof Long
                || value instanceof Integer
                || value instanceof Short
                || value instanceof Byte
                || value instanceof BigDecimal
                || value instanceof BigInteger
                || value instanceof Double
                || value instanceof Float) {
            return value.toString();
        }
        if (value instanceof Enum<?>) {
            return ((Enum<?>) value).name();
        }
        throw new IllegalArgumentException(
                "a batch value of type " + value.getClass().getName()
                        + " cannot be sent as text; use a string, number, boolean, UUID, java.time value or enum");
    }

    /** A whole number that travels in a {@code bigint[]}. */
    public static boolean integral(Object value) {
        return value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte;
    }

    /** All values whole numbers, and at least one not null (an all-NULL column travels as text). */
    public static boolean integral(List<Object> values) {
        boolean any = false;
        for (Object value : values) {
            any |= value != null;
            if (value != null
                    && !(value instanceof Long
                            || value instanceof Integer
                            || value instanceof Short
                            || value instanceof Byte)) {
                return false;
            }
        }
        return any;
    }

    /** The values of {@code rows} (all of them when null), as whole numbers; nulls stay null. */
    public static Long[] longs(List<?> values, List<Integer> rows) {
        int size = rows == null ? values.size() : rows.size();
        Long[] longs = new Long[size];
        for (int i = 0; i < size; i++) {
            Object value = values.get(rows == null ? i : rows.get(i));
            longs[i] = value == null || value instanceof Long ? (Long) value : (Long) ((Number) value).longValue();
        }
        return longs;
    }

    /** The values of {@code rows} (all of them when null), as text PostgreSQL reads back; see {@link #text}. */
    public static String[] texts(List<Object> values, List<Integer> rows) {
        int size = rows == null ? values.size() : rows.size();
        String[] texts = new String[size];
        for (int i = 0; i < size; i++) {
            texts[i] = text(values.get(rows == null ? i : rows.get(i)));
        }
        return texts;
    }
}
