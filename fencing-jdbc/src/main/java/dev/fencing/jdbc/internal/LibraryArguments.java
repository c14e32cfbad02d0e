package dev.fencing.jdbc.internal;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.jdbi.v3.core.argument.Argument;
import org.jdbi.v3.core.statement.StatementContext;

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
        return new LongArgument(value);
    }

    /** A key value: {@code Long}, {@code Integer} and {@code String} directly, anything else as Jdbi binds it. */
    static Object ofKey(Object value) {
        if (value instanceof Long l) {
            return new LongArgument(l);
        }
        if (value instanceof Integer i) {
            return new IntArgument(i);
        }
        if (value instanceof String s) {
            return new StringArgument(s);
        }
        return value;
    }

    // records, so that a statement's parameters read as their values in Jdbi's exception messages

    private record LongArgument(long value) implements Argument {
        @Override
        public void apply(int position, PreparedStatement statement, StatementContext ctx) throws SQLException {
            statement.setLong(position, value);
        }

        @Override
        public String toString() {
            return Long.toString(value);
        }
    }

    private record IntArgument(int value) implements Argument {
        @Override
        public void apply(int position, PreparedStatement statement, StatementContext ctx) throws SQLException {
            statement.setInt(position, value);
        }

        @Override
        public String toString() {
            return Integer.toString(value);
        }
    }

    private record StringArgument(String value) implements Argument {
        @Override
        public void apply(int position, PreparedStatement statement, StatementContext ctx) throws SQLException {
            statement.setString(position, value);
        }

        @Override
        public String toString() {
            return "'" + value + "'";
        }
    }
}
