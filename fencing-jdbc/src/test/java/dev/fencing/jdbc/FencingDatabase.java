package dev.fencing.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;

/**
 * A fresh database on the JVM's shared PostgreSQL, migrated with the fencing-db module's migrations, with the
 * test schema: a protected {@code inventory} table, its unprotected twin {@code inventory_plain}, and a
 * {@code reservation} table for claim-then-run. One per test class.
 */
final class FencingDatabase implements AutoCloseable {
    static final List<String> SCHEMA = List.of(
            "CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL,"
                    + " history BIGINT[] NOT NULL DEFAULT '{}', updated_by TEXT)",
            "DO $$ BEGIN PERFORM fencing.protect_table('inventory'); END $$",
            "CREATE TABLE inventory_plain (LIKE inventory INCLUDING ALL)",
            "CREATE TABLE reservation (id BIGSERIAL PRIMARY KEY, sku TEXT NOT NULL, qty INT NOT NULL)");

    final PostgresEndpoint database;
    final HikariDataSource pool;
    /** Counts connections taken, so a test can show that nothing reached the database. */
    final AtomicLong connectionsTaken = new AtomicLong();

    final Jdbi jdbi;

    private FencingDatabase(String prefix, int poolSize) {
        this.database = PostgresServers.shared().createDatabase(prefix);
        Flyway.configure()
                .dataSource(database.dataSource())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        HikariConfig config = new HikariConfig();
        config.setDataSource(database.dataSource());
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(0);
        this.pool = new HikariDataSource(config);
        this.jdbi = Jdbi.create(new Counting(pool, connectionsTaken));
        jdbi.useHandle(h -> SCHEMA.forEach(h::execute));
    }

    static FencingDatabase create(String prefix, int poolSize) {
        return new FencingDatabase(prefix, poolSize);
    }

    FencedTable inventory() {
        return FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
    }

    void reset(String... skus) {
        jdbi.useHandle(h -> {
            h.execute("TRUNCATE inventory, inventory_plain, reservation");
            h.execute("DELETE FROM fencing.watermark");
            for (String sku : skus) {
                h.execute("INSERT INTO inventory (sku, stock) VALUES (?, 10)", sku);
                h.execute("INSERT INTO inventory_plain (sku, stock) VALUES (?, 10)", sku);
            }
        });
    }

    /** {@code stock:last_fence_token} of a protected row, or null. */
    String row(String sku) {
        return jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM inventory WHERE sku = ?")
                        .bind(0, sku)
                        .mapTo(String.class)
                        .findOne()
                        .orElse(null));
    }

    @Override
    public void close() {
        pool.close();
        database.close();
    }

    private static final class Counting implements DataSource {
        private final DataSource delegate;
        private final AtomicLong taken;

        Counting(DataSource delegate, AtomicLong taken) {
            this.delegate = delegate;
            this.taken = taken;
        }

        @Override
        public Connection getConnection() throws SQLException {
            taken.incrementAndGet();
            return delegate.getConnection();
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            taken.incrementAndGet();
            return delegate.getConnection(user, password);
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return delegate.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            delegate.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            delegate.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return delegate.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            return delegate.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return delegate.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return delegate.isWrapperFor(iface);
        }
    }
}
