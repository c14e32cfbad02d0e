package dev.fencing.kafka.internal;

import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.sql.SQLTransientConnectionException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Which failures of the store's database are transient: a unit, record or group rolled back by one of them may
 * be run again from the same records once the database answers. Pure functions, no I/O.
 *
 * <ul>
 *   <li>SQLSTATE class {@code 08}, connection exception: the connection could not be made (refused, {@code
 *       08001}), broke ({@code 08006}, what pgjdbc reports for an I/O error), or was closed ({@code 08003}); but
 *       not {@code 08004}, which pgjdbc raises when it rejects a connection as configured (SSL or GSS encryption
 *       or channel binding required and not offered by the server, an authentication type it does not support,
 *       SCRAM asked for and no password given, a server signature that does not verify) and PostgreSQL does not
 *       send: waiting does not change the configuration.
 *   <li>{@code 57P01} admin shutdown, {@code 57P02} crash shutdown, {@code 57P03} cannot connect now (starting
 *       up, shutting down, in recovery): the server is going away or not back yet.
 *   <li>{@code 40001} serialization failure and {@code 40P01} deadlock: PostgreSQL rolled the transaction back
 *       and says to run it again.
 *   <li>{@code 53300} too many connections: a server coming back is stormed by every pool reconnecting.
 *   <li>{@link SQLTransientConnectionException} (a pool, such as HikariCP, that found no connection in time)
 *       and {@link SQLTransactionRollbackException} (JDBC's name for class 40), whatever their state, except
 *       a pool's timeout that carries the state of a failure that will not pass by itself: class {@code 28}
 *       (the password or the user is wrong), {@code 3D000} (no such database) and {@code 08004}.
 * </ul>
 *
 * Everything else is not: constraint violations, syntax errors, {@code 57014} (a statement timeout or a
 * cancel: running it again would time out again), {@code 25P02}, disk full, permissions.
 */
public final class TransientFailures {
    private TransientFailures() {}

    /** Whether {@code state} names a transient failure, as listed above. */
    public static boolean transientState(String state) {
        if (state == null || state.length() != 5) {
            return false;
        }
        return (state.startsWith("08") && !state.equals("08004"))
                || state.equals("57P01")
                || state.equals("57P02")
                || state.equals("57P03")
                || state.equals("40001")
                || state.equals("40P01")
                || state.equals("53300");
    }

    /**
     * A connection failure that waiting does not mend: wrong credentials, a database that does not exist, or a
     * connection the driver rejects as configured.
     */
    private static boolean permanentState(String state) {
        return state != null && (state.startsWith("28") || state.equals("3D000") || state.equals("08004"));
    }

    /** Whether {@code failure} or one of its causes is a transient failure of the database. */
    public static boolean isTransient(Throwable failure) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof SQLTransientConnectionException pool && !permanentState(pool.getSQLState())) {
                return true;
            }
            if (t instanceof SQLTransactionRollbackException) {
                return true;
            }
            if (t instanceof SQLException sql) {
                for (SQLException next = sql.getNextException();
                        next != null && seen.add(next);
                        next = next.getNextException()) {
                    if (transientState(next.getSQLState())) {
                        return true;
                    }
                }
                if (transientState(sql.getSQLState())) {
                    return true;
                }
            }
        }
        return false;
    }
}
