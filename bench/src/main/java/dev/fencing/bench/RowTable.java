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
 * The database effect of {@link KafkaPostgresBenchmark}'s fenced-row case: each record sets the balance of the
 * account its key names to its value's length, {@code UPDATE bench_row SET balance = ? WHERE account = ?}, a
 * unit's updates in one JDBC batch. The table is protected ({@code fencing.protect_table}): the fenced side's
 * {@code FencedRowHandler} writes the same rows with the token check in the same statement.
 */
final class RowTable {
    static final String TABLE = "bench_row";
    static final String UPDATE = "UPDATE bench_row SET balance = ? WHERE account = ?";

    private RowTable() {}

    /** The table, protected, with one row per key {@code key-0 .. key-(keys-1)} as {@link FencedTopic} writes them. */
    static void create(DataSource dataSource, int keys) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE bench_row (account TEXT PRIMARY KEY, balance BIGINT NOT NULL)");
            statement.execute("SELECT fencing.protect_table('bench_row')");
        }
        reset(dataSource, keys);
    }

    /** Every row back to balance 0 and token 0 (a fresh table: the guard refuses lowering a token), vacuumed. */
    static void reset(DataSource dataSource, int keys) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE bench_row");
            statement.execute(
                    "INSERT INTO bench_row SELECT 'key-' || g, 0 FROM generate_series(0, " + (keys - 1) + ") AS g");
            statement.execute("VACUUM ANALYZE bench_row");
        }
    }

    /** How many rows a round wrote (a balance is a value's length, never 0 once written). */
    static long written(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT count(*) FROM bench_row WHERE balance > 0")) {
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
