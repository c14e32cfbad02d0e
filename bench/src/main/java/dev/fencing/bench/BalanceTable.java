package dev.fencing.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The database effect of {@link KafkaPostgresBenchmark}, the same on both sides: each record adds its value's
 * length to the balance of the account named by its key and counts one update, {@code UPDATE bench_balance
 * ... WHERE account = ?} by primary key. A unit's updates go to the server as one JDBC batch ({@link Batch}),
 * as a user applying a poll's records would send them.
 */
final class BalanceTable {
    static final String UPDATE =
            "UPDATE bench_balance SET balance = balance + ?, updates = updates + 1 WHERE account = ?";

    private BalanceTable() {}

    /** The table, with one row per key {@code key-0 .. key-(keys-1)} as {@link FencedTopic} writes them. */
    static void create(DataSource dataSource, int keys) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE bench_balance (account TEXT PRIMARY KEY, balance BIGINT NOT NULL,"
                    + " updates BIGINT NOT NULL)");
            statement.execute("INSERT INTO bench_balance SELECT 'key-' || g, 0, 0 FROM generate_series(0, " + (keys - 1)
                    + ") AS g");
            statement.execute("VACUUM ANALYZE bench_balance");
        }
    }

    /** Zeroes every row and vacuums, so each round starts from the same table. */
    static void reset(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("UPDATE bench_balance SET balance = 0, updates = 0");
            statement.execute("VACUUM bench_balance");
        }
    }

    /** How many updates the table has counted since the last {@link #reset}. */
    static long updates(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT coalesce(sum(updates), 0) FROM bench_balance")) {
            rows.next();
            return rows.getLong(1);
        }
    }

    /** One unit's updates, collected record by record and sent in one {@code executeBatch}. */
    static final class Batch implements HandWrittenExactlyOnceLoop.Effect {
        private final List<String> accounts = new ArrayList<>();
        private final List<Integer> amounts = new ArrayList<>();

        @Override
        public void add(String account, int amount) {
            accounts.add(account);
            amounts.add(amount);
        }

        /** Sends the batch on {@code connection} (inside the caller's transaction); fails if a row is missing. */
        @Override
        public void flush(Connection connection) throws SQLException {
            if (accounts.isEmpty()) {
                return;
            }
            try (PreparedStatement statement = connection.prepareStatement(UPDATE)) {
                for (int i = 0; i < accounts.size(); i++) {
                    statement.setLong(1, amounts.get(i));
                    statement.setString(2, accounts.get(i));
                    statement.addBatch();
                }
                int[] counts = statement.executeBatch();
                for (int i = 0; i < counts.length; i++) {
                    if (counts[i] != 1) {
                        throw new IllegalStateException("no row for account " + accounts.get(i));
                    }
                }
            }
            accounts.clear();
            amounts.clear();
        }
    }
}
