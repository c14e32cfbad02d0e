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
 * work with it. The driver is reached by reflection on the connection's own class (so that fencing-jdbc needs
 * pgjdbc only at run time, from whichever class loader the pool loaded it); a connection that does not
 * reveal pgjdbc's connection through {@link Connection#unwrap} has an unknown state.
 */
final class ServerTransactions {
    private static final String DRIVER_CONNECTION = "org.postgresql.core.BaseConnection";

    /** pgjdbc's {@code getTransactionState()} of a connection class, or null when it is not pgjdbc's. */
    private static final ClassValue<Method> STATE = new ClassValue<>() {
        @Override
        protected Method computeValue(Class<?> type) {
            Class<?> driverConnection = driverConnection(type);
            if (driverConnection == null) {
                return null;
            }
            try {
                return driverConnection.getMethod("getTransactionState");
            } catch (NoSuchMethodException e) {
                return null;
            }
        }
    };

    /** What pgjdbc says of a connection's transaction. */
    enum State {
        /** no transaction open */
        IDLE,
        /** a transaction open, or failed and not yet ended */
        OPEN,
        /** not pgjdbc's connection, or a pgjdbc that does not say */
        UNKNOWN
    }

    private ServerTransactions() {}

    static State of(Connection connection) {
        try {
            Connection driver = connection.unwrap(Connection.class);
            Method state = STATE.get(driver.getClass());
            if (state == null) {
                return State.UNKNOWN;
            }
            return "IDLE".equals(((Enum<?>) state.invoke(driver)).name()) ? State.IDLE : State.OPEN;
        } catch (SQLException e) {
            throw new TransactionException("could not read the connection's transaction state", e);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("pgjdbc's " + DRIVER_CONNECTION + ".getTransactionState() failed", e);
        }
    }

    private static Class<?> driverConnection(Class<?> type) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Class<?> implemented : c.getInterfaces()) {
                Class<?> found = named(implemented);
                if (found != null) {
                    return found;
                }
            }
        }
        return null;
    }

    private static Class<?> named(Class<?> type) {
        if (DRIVER_CONNECTION.equals(type.getName())) {
            return type;
        }
        for (Class<?> parent : type.getInterfaces()) {
            Class<?> found = named(parent);
            if (found != null) {
                return found;
            }
        }
        return null;
    }
}
