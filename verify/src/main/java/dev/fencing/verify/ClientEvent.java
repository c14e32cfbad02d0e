package dev.fencing.verify;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * One event line of a child JVM ({@code E <epoch ms> <kind> <fields...>}), with the child that sent it. Writer
 * events carry the resource and token as their first two fields. Immutable.
 *
 * @param child the sender, for example {@code writer 3} or {@code consumer 2}
 * @param id the sender's number
 * @param time when it was sent, epoch ms
 * @param kind {@code LOCKED}, {@code WRITTEN}, {@code POINT}, ...
 * @param fields the rest of the line
 */
record ClientEvent(String child, int id, long time, String kind, List<String> fields) {

    /** Parses a line; anything else a child prints (a stray log line) is empty. */
    static Optional<ClientEvent> parse(String child, int id, String line) {
        String[] parts = line.trim().split(" ");
        if (parts.length < 3 || !parts[0].equals("E")) {
            return Optional.empty();
        }
        try {
            return Optional.of(new ClientEvent(
                    child,
                    id,
                    Long.parseLong(parts[1]),
                    parts[2],
                    List.copyOf(Arrays.asList(parts).subList(3, parts.length))));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    boolean is(String expectedKind) {
        return kind.equals(expectedKind);
    }

    String field(int index) {
        return index < fields.size() ? fields.get(index) : "";
    }

    /**
     * The field at {@code index} (from 0) as a number.
     *
     * @throws VerifyException naming the sender, the kind, the field (from 1) and its text, if the event has no such
     *     field or it is not a {@code long} spelled as {@link Long#toString(long)} spells it: read as 0, a malformed
     *     token would hide a takeover or invent one; and the children print numbers that way, so {@code "+5"} or
     *     {@code "05"} is not what a child sent and is refused as the dead letters' origin headers are
     */
    long number(int index) {
        if (index >= fields.size()) {
            throw new VerifyException(child + " sent a " + kind + " event without field " + (index + 1)
                    + " (it has only " + fields.size() + "): " + fields);
        }
        String text = fields.get(index);
        NumberFormatException cause = null;
        try {
            long value = Long.parseLong(text);
            if (Long.toString(value).equals(text)) {
                return value;
            }
        } catch (NumberFormatException e) {
            cause = e;
        }
        throw new VerifyException(
                child + " sent a " + kind + " event whose field " + (index + 1) + " is '" + text
                        + "', not a number in decimal form: " + fields,
                cause);
    }

    /** The resource of a writer event (its first field). */
    String resource() {
        return field(0);
    }

    /** The token of a writer event (its second field). */
    long token() {
        return number(1);
    }
}
