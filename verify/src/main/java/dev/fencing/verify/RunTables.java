package dev.fencing.verify;

import dev.fencing.verify.checker.Observed;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * A mode's tables, dropped and made afresh before its run, in the shape the checker reads (see the {@code
 * checker} package): {@code resources} (a row per resource whose {@code ids} array is the list the writers append
 * to; protected by the guard trigger in the fenced run), {@code applied} (the consumers' lists) and {@code
 * dead_letters} (the dead-letter topic, copied). Stateless.
 */
final class RunTables {
    private RunTables() {}

    static void prepare(DataSource database, Mode mode, int resources) {
        String schema = mode.schema();
        try (Connection connection = database.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            statement.execute("CREATE SCHEMA " + schema);
            statement.execute("CREATE TABLE " + schema + ".resources (resource TEXT PRIMARY KEY,"
                    + " ids BIGINT[] NOT NULL DEFAULT '{}', last_op BIGINT)");
            for (int i = 1; i <= resources; i++) {
                statement.execute("INSERT INTO " + schema + ".resources (resource) VALUES ('r" + i + "')");
            }
            if (mode == Mode.FENCED) {
                statement.execute("SELECT fencing.protect_table('" + schema + ".resources')");
            }
            statement.execute(
                    "CREATE TABLE " + schema + ".applied (record_key TEXT PRIMARY KEY, ids BIGINT[] NOT NULL)");
            // each dead letter's own place in the dead-letter topic is its key, so copying the topic again adds
            // nothing, also for the letters of an unknown origin (-1), which no origin tells apart
            statement.execute("CREATE TABLE " + schema + ".dead_letters (origin_partition INT NOT NULL,"
                    + " origin_offset BIGINT NOT NULL, record_key TEXT, op BIGINT, reason TEXT NOT NULL, detail TEXT,"
                    + " letter_partition INT NOT NULL, letter_offset BIGINT NOT NULL,"
                    + " PRIMARY KEY (letter_partition, letter_offset))");
            // a known origin is one row however often it was dead-lettered; letters of an unknown origin (-1) are
            // each kept, or all but the first of them would be lost
            statement.execute(
                    "CREATE UNIQUE INDEX dead_letters_origin ON " + schema
                            + ".dead_letters (origin_partition, origin_offset) WHERE origin_partition >= 0 AND origin_offset >= 0");
        } catch (SQLException e) {
            throw new VerifyException("cannot create the tables of " + schema + ": " + e.getMessage(), e);
        }
    }

    /** Each resource's list of ids, as the mode's run left it. */
    static Map<String, List<Long>> lists(DataSource database, Mode mode) {
        try (Connection connection = database.getConnection()) {
            return Observed.read(connection, mode.schema()).lists();
        } catch (SQLException e) {
            throw new VerifyException("cannot read the run's tables: " + e.getMessage(), e);
        }
    }

    /** Drops the mode's schema and everything in it. */
    static void drop(DataSource database, Mode mode) {
        try (Connection connection = database.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("DROP SCHEMA IF EXISTS " + mode.schema() + " CASCADE");
        } catch (SQLException e) {
            throw new VerifyException("cannot drop " + mode.schema() + ": " + e.getMessage(), e);
        }
    }
}
