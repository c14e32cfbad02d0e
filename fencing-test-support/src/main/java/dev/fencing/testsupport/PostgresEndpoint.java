package dev.fencing.testsupport;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A PostgreSQL database a test can connect to. Closing it stops what the tests started; an external
 * server is left alone.
 *
 * <pre>{@code
 * try (PostgresEndpoint server = PostgresServers.start();
 *         PostgresEndpoint db = server.createDatabase("inventory_it")) {
 *     Jdbi jdbi = Jdbi.create(db.dataSource());
 *     ...
 * } // db is dropped, then the server stopped (if the test started it)
 * }</pre>
 */
public interface PostgresEndpoint extends AutoCloseable {

    /** A JDBC URL, {@code jdbc:postgresql://host:port/database[?params]}. */
    String jdbcUrl();

    String user();

    /** The password, or an empty string where the server trusts local connections. */
    String password();

    /** A fresh unpooled data source for this database. */
    default DataSource dataSource() {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(jdbcUrl());
        dataSource.setUser(user());
        if (!password().isEmpty()) {
            dataSource.setPassword(password());
        }
        return dataSource;
    }

    /**
     * Creates a new, empty database on the same server, named {@code prefix} plus a random suffix, so
     * test classes sharing one server do not see each other's tables. Closing the returned endpoint drops
     * that database (forcibly, closing its connections). On an external server the user needs {@code
     * CREATEDB}.
     *
     * @param prefix lower-case letters, digits and underscores, starting with a letter
     */
    default PostgresEndpoint createDatabase(String prefix) {
        if (prefix == null || !prefix.matches("[a-z][a-z0-9_]{0,40}")) {
            throw new IllegalArgumentException("database prefix must match [a-z][a-z0-9_]{0,40}, got '" + prefix + "'");
        }
        String name = prefix + "_" + Long.toString(ThreadLocalRandom.current().nextLong() >>> 1, 36);
        PostgresEndpoint server = this;
        PostgresEndpoints.execute(server, "CREATE DATABASE " + name);
        String url = PostgresEndpoints.withDatabase(jdbcUrl(), name);
        return new PostgresEndpoints.Fixed(
                url,
                server.user(),
                server.password(),
                "database " + name + " on " + server,
                () -> PostgresEndpoints.execute(server, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"));
    }

    /** Stops the server if the tests started it (or drops a database made by {@link #createDatabase}). */
    @Override
    void close();
}

/** Plumbing shared by the endpoint implementations. */
final class PostgresEndpoints {
    private PostgresEndpoints() {}

    /** An endpoint given by its coordinates; closing it runs {@code onClose}. */
    record Fixed(String jdbcUrl, String user, String password, String description, Runnable onClose)
            implements PostgresEndpoint {
        @Override
        public void close() {
            onClose.run();
        }

        @Override
        public String toString() {
            return description;
        }
    }

    static void execute(PostgresEndpoint endpoint, String sql) {
        try (Connection connection = endpoint.dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "on " + endpoint.jdbcUrl() + ": '" + sql + "' failed: " + e.getMessage(), e);
        }
    }

    /** Replaces the database name of a {@code jdbc:postgresql://hosts/db?params} URL. */
    static String withDatabase(String jdbcUrl, String database) {
        String prefix = "jdbc:postgresql://";
        if (!jdbcUrl.toLowerCase(Locale.ROOT).startsWith(prefix)) {
            throw new IllegalArgumentException("not a jdbc:postgresql:// URL: " + jdbcUrl);
        }
        int hostsEnd = jdbcUrl.indexOf('/', prefix.length());
        int query = jdbcUrl.indexOf('?', prefix.length());
        String params = query >= 0 ? jdbcUrl.substring(query) : "";
        String hosts;
        if (hostsEnd >= 0 && (query < 0 || hostsEnd < query)) {
            hosts = jdbcUrl.substring(0, hostsEnd);
        } else {
            hosts = query >= 0 ? jdbcUrl.substring(0, query) : jdbcUrl;
        }
        return hosts + "/" + database + params;
    }
}
