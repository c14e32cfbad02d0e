package dev.fencing.jdbc.internal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.ZonedDateTime;
import java.time.temporal.TemporalAccessor;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * How a batch column travels: as a {@code bigint[]} when every value is a whole number (the common key
 * and counter case; no text round trip), otherwise as a {@code text[]} of values PostgreSQL can read
 * back; either way cast once to an array of the column's type in the statement.
 */
public final class BatchValues {
    private BatchValues() {}

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

    public static List<Long> longs(List<Object> values, List<Integer> rows) {
        List<Long> longs = new ArrayList<>(rows.size());
        for (int row : rows) {
            Object value = values.get(row);
            longs.add(value == null ? null : ((Number) value).longValue());
        }
        return longs;
    }

    public static List<String> texts(List<Object> values, List<Integer> rows) {
        List<String> texts = new ArrayList<>(rows.size());
        for (int row : rows) {
            texts.add(text(values.get(row)));
        }
        return texts;
    }
}
