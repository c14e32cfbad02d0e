package dev.fencing.spring.internal;

import java.sql.Connection;
import javax.sql.DataSource;
import org.jdbi.v3.core.ConnectionFactory;
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

    @Override
    public Connection openConnection() {
        return DataSourceUtils.getConnection(dataSource);
    }

    @Override
    public void closeConnection(Connection connection) {
        DataSourceUtils.releaseConnection(connection, dataSource);
    }
}
