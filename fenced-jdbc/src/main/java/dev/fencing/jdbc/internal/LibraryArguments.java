package dev.fencing.jdbc.internal;

import org.jdbi.v3.core.argument.Argument;

/**
 * The library's own parameters (token, key, sizes) bound as {@link Argument}s, the way Jdbi's built-in
 * factories bind a {@code long} or a {@code String}. Bound by value, Jdbi looks the factory up again for
 * every statement (a fresh copy of its configuration each time): measured at several microseconds a
 * parameter, as much as a small write's own statement costs the client. A caller's argument factories for
 * {@code Long} or {@code String} do not apply to these parameters, as the caller's SQL parser and template
 * engine do not apply to the library's statements (see StatementParser).
 */
final class LibraryArguments {
    private LibraryArguments() {}

    static Argument ofLong(long value) {
        return (position, statement, ctx) -> statement.setLong(position, value);
    }

    /** A key value: {@code Long}, {@code Integer} and {@code String} directly, anything else as Jdbi binds it. */
    static Object ofKey(Object value) {
        if (value instanceof Long l) {
            return ofLong(l);
        }
        if (value instanceof Integer i) {
            return (Argument) (position, statement, ctx) -> statement.setInt(position, i);
        }
        if (value instanceof String s) {
            return (Argument) (position, statement, ctx) -> statement.setString(position, s);
        }
        return value;
    }
}
