package dev.fencing.spring.internal;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jdbi.v3.core.ConnectionFactory;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * Hands Jdbi the connection of the Spring-managed transaction running on this thread, if there is one, and
 * a pooled connection otherwise. Inside a {@code @Transactional} method a Jdbi handle therefore works on
 * the transaction's connection (with auto-commit off, so Jdbi joins instead of beginning a transaction of
 * its own) and closing the handle leaves that connection to the transaction manager: what the handle
 * wrote commits or rolls back with the rest of the transaction.
 */
public final class SpringTransactionConnections implements ConnectionFactory {
    private final DataSource dataSource;

    public SpringTransactionConnections(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Throws the pool's or driver's own {@link SQLException} when no connection can be had, as Jdbi's contract
     * says, not Spring's wrapper: Jdbi turns it into its {@code ConnectionException}, and fencing-kafka's
     * consumer reads its SQL state (a refused connection, a pool that timed out) as a transient failure to
     * retry, where Spring's unchecked wrapper would have stopped the consumer for good.
     */
    @Override
    public Connection openConnection() throws SQLException {
        try {
            return DataSourceUtils.getConnection(dataSource);
        } catch (CannotGetJdbcConnectionException e) {
            if (e.getCause() instanceof SQLException sql) {
                throw sql;
            }
            throw e;
        }
    }

    @Override
    public void closeConnection(Connection connection) {
        DataSourceUtils.releaseConnection(connection, dataSource);
    }
}
