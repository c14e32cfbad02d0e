package dev.fencing.verify.checker;

import java.util.Locale;
import java.util.Map;

/**
 * One line of a client's history (see the package documentation for the format).
 *
 * @param type {@code invoke}, {@code ok}, {@code fail} or {@code info}
 * @param function {@code append} (the write to the resource's row) or {@code publish} (the Kafka record)
 * @param op the operation's id, unique in the run
 * @param client the client that ran it
 * @param resource the resource (row key and record key)
 * @param token the fence token the operation ran under
 * @param time when the line was written, epoch milliseconds
 * @param path the write path of an {@code append} invoke ({@code update}, {@code upsert}, {@code batch},
 *     {@code claim}, {@code plain}), else null
 * @param stamped whether a {@code publish} invoke's record carries the token header, else null
 * @param partition the partition of a {@code publish} ok (which must carry it, an int at least 0), else null
 * @param offset the offset of a {@code publish} ok (which must carry it, at least 0), else null
 * @param error what went wrong, for {@code fail} and {@code info}, else null
 */
public record HistoryEntry(
        Type type,
        Function function,
        long op,
        int client,
        String resource,
        long token,
        long time,
        String path,
        Boolean stamped,
        Integer partition,
        Long offset,
        String error) {

    /** The kind of line: Jepsen's invoke and its three completions. */
    public enum Type {
        INVOKE,
        OK,
        FAIL,
        INFO;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** What the operation does. */
    public enum Function {
        APPEND,
        PUBLISH;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * Reads one line.
     *
     * @throws IllegalArgumentException naming what is wrong with it
     */
    static HistoryEntry parse(String line) {
        return of(JsonLine.parse(line));
    }

    /**
     * Reads one line's members.
     *
     * @throws IllegalArgumentException naming what is wrong with them
     */
    static HistoryEntry of(Map<String, Object> members) {
        Type type = enumOf(Type.class, text(members, "type", true));
        Function function = enumOf(Function.class, text(members, "f", true));
        long op = whole(members, "op");
        long client = whole(members, "client");
        String resource = text(members, "resource", true);
        long token = whole(members, "token");
        long time = whole(members, "time");
        if (op <= 0 || client <= 0 || client > Integer.MAX_VALUE || token <= 0 || time <= 0) {
            throw new IllegalArgumentException("op, client, token and time must be positive: " + members);
        }
        Long partition = wholeOrNull(members, "partition");
        Long offset = wholeOrNull(members, "offset");
        if (partition != null && (partition < 0 || partition > Integer.MAX_VALUE)) {
            throw new IllegalArgumentException("\"partition\" must be a partition number, got " + partition);
        }
        if (offset != null && offset < 0) {
            throw new IllegalArgumentException("\"offset\" must not be negative, got " + offset);
        }
        if (function == Function.PUBLISH && type == Type.OK && (partition == null || offset == null)) {
            // fail closed: without them the record would be judged as one whose send timed out
            throw new IllegalArgumentException(
                    "an ok publish needs \"partition\" and \"offset\", got " + partition + " and " + offset);
        }
        Object stamped = members.get("stamped");
        if (stamped != null && !(stamped instanceof Boolean)) {
            throw new IllegalArgumentException("\"stamped\" must be true or false, got " + stamped);
        }
        return new HistoryEntry(
                type,
                function,
                op,
                (int) client,
                resource,
                token,
                time,
                text(members, "path", false),
                (Boolean) stamped,
                partition == null ? null : partition.intValue(),
                offset,
                text(members, "error", false));
    }

    private static <E extends Enum<E>> E enumOf(Class<E> type, String value) {
        try {
            return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "unknown " + type.getSimpleName().toLowerCase(Locale.ROOT) + " '" + value + "'");
        }
    }

    private static String text(Map<String, Object> members, String name, boolean required) {
        Object value = members.get(name);
        if (value == null) {
            if (required) {
                throw new IllegalArgumentException("\"" + name + "\" is missing");
            }
            return null;
        }
        if (!(value instanceof String text)) {
            throw new IllegalArgumentException("\"" + name + "\" must be a string, got " + value);
        }
        return text;
    }

    private static long whole(Map<String, Object> members, String name) {
        Long value = wholeOrNull(members, name);
        if (value == null) {
            throw new IllegalArgumentException("\"" + name + "\" is missing");
        }
        return value;
    }

    private static Long wholeOrNull(Map<String, Object> members, String name) {
        Object value = members.get(name);
        if (value == null) {
            return null;
        }
        if (!(value instanceof Long number)) {
            throw new IllegalArgumentException("\"" + name + "\" must be a whole number, got " + value);
        }
        return number;
    }
}
