package dev.fencing.jdbc.internal;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import org.jdbi.v3.core.transaction.TransactionException;

/**
 * Whether a connection's server has a transaction open, asked of PostgreSQL's JDBC driver (pgjdbc), which
 * tracks it from every reply. A Jdbi handle knows only the transactions its transaction handler began; on
 * a connection that does not auto-commit, a caller's statements outside them are still an open transaction,
 * and a batch that committed or rolled back a transaction of its own there would commit or undo the caller's
 * work with it. The driver is reached by reflection, so that fenced-jdbc needs it only at run time; with
 * another driver the handle's answer stands.
 */
final class ServerTransactions {
    private static final String DRIVER_CONNECTION = "org.postgresql.core.BaseConnection";

    private static final Class<?> PG_CONNECTION = load();
    private static final Method TRANSACTION_STATE = stateMethod();

    private ServerTransactions() {}

    /**
     * {@code true} when pgjdbc says the connection's transaction is open (or failed); {@code false} when it
     * is idle, or when the connection is not pgjdbc's.
     */
    static boolean open(Connection connection) {
        if (TRANSACTION_STATE == null) {
            return false;
        }
        try {
            if (!connection.isWrapperFor(PG_CONNECTION)) {
                return false;
            }
            Object state = TRANSACTION_STATE.invoke(connection.unwrap(PG_CONNECTION));
            return !"IDLE".equals(((Enum<?>) state).name());
        } catch (SQLException e) {
            throw new TransactionException("could not read the connection's transaction state", e);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("pgjdbc's " + DRIVER_CONNECTION + ".getTransactionState() failed", e);
        }
    }

    private static Class<?> load() {
        for (ClassLoader loader : new ClassLoader[] {
            ServerTransactions.class.getClassLoader(), Thread.currentThread().getContextClassLoader()
        }) {
            try {
                return Class.forName(DRIVER_CONNECTION, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                // not here: try the next loader
            }
        }
        return null;
    }

    private static Method stateMethod() {
        if (PG_CONNECTION == null) {
            return null;
        }
        try {
            return PG_CONNECTION.getMethod("getTransactionState");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
