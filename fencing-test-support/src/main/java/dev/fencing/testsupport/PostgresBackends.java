package dev.fencing.testsupport;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Kills PostgreSQL backends, as an operator, the OOM killer or a failover does to a client's session in the
 * middle of its transaction: the transaction is rolled back and the client sees its connection end, not knowing
 * whether its commit (if it was sending one) went through.
 *
 * <pre>{@code
 * int pid = PostgresBackends.backendPid(connection);         // in the client, inside its transaction
 * boolean killed = PostgresBackends.terminate(admin, pid);    // from any other connection
 * }</pre>
 *
 * {@link #terminate} needs a superuser or a member of {@code pg_signal_backend} (or the same role as the
 * backend). Thread-safe: every call uses its own connection or the one given.
 */
public final class PostgresBackends {
    private PostgresBackends() {}

    /** The pid of the server process serving {@code connection} ({@code pg_backend_pid()}). */
    public static int backendPid(Connection connection) {
        try (Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT pg_backend_pid()")) {
            result.next();
            return result.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the backend pid: " + e.getMessage(), e);
        }
    }

    /**
     * Terminates the backend {@code pid} with {@code pg_terminate_backend} on a connection of {@code admin}: the
     * server sends it SIGTERM, its open transaction is rolled back and its client's next statement fails.
     *
     * @return true if the backend existed and was terminated, false if there was no such backend
     * @throws IllegalArgumentException if {@code pid <= 0}
     * @throws IllegalStateException when the server refuses (not allowed) or cannot be reached
     */
    public static boolean terminate(DataSource admin, int pid) {
        if (pid <= 0) {
            throw new IllegalArgumentException("backend pid must be positive, got " + pid);
        }
        try (Connection connection = admin.getConnection();
                PreparedStatement statement = connection.prepareStatement("SELECT pg_terminate_backend(?)")) {
            statement.setInt(1, pid);
            try (ResultSet result = statement.executeQuery()) {
                result.next();
                return result.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("pg_terminate_backend(" + pid + ") failed: " + e.getMessage(), e);
        }
    }
}
