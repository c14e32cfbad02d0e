package dev.fencing.harness;

import com.zaxxer.hikari.HikariConfig;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What a run's coordinator asks of PostgreSQL outside its workload, and the pool its children write through.
 * Stateless and thread-safe.
 */
public final class PostgresAccess {
    private PostgresAccess() {}

    /** An unpooled data source; an empty password is not set. */
    public static PGSimpleDataSource dataSource(String url, String user, String password) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(url);
        dataSource.setUser(user);
        if (!password.isEmpty()) {
            dataSource.setPassword(password);
        }
        dataSource.setLoginTimeout(ZooKeeperAccess.CONNECT_TIMEOUT_SECONDS);
        return dataSource;
    }

    /**
     * A child's pool for its {@code jdbcUrl} and {@code jdbcUser} arguments, with the password from the environment
     * variable {@code passwordEnv} (none when it is unset or empty): the coordinator passes the password there, not
     * on a command line that {@code ps} shows. A config, for the child to adjust and open.
     */
    public static HikariConfig childPool(ChildArguments args, String passwordEnv, int size, String name) {
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(args.text("jdbcUrl"));
        pool.setUsername(args.text("jdbcUser"));
        String password = System.getenv(passwordEnv);
        if (password != null && !password.isEmpty()) {
            pool.setPassword(password);
        }
        pool.setMaximumPoolSize(size);
        pool.setPoolName(name);
        return pool;
    }

    /**
     * The pid of the server's postmaster, when it runs on this host, for a {@link Watchdog} to stop it: an embedded
     * PostgreSQL runs as a daemon, not as a child of this JVM, and would outlive a JVM killed outright. Looked up
     * while a connection is open: its backend exits when it closes, and then has no parent to find.
     *
     * @throws HarnessException if the server cannot be reached
     */
    public static OptionalLong postmasterPid(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT pg_backend_pid()")) {
            result.next();
            return ProcessHandle.of(result.getLong(1))
                    .flatMap(ProcessHandle::parent)
                    .map(process -> OptionalLong.of(process.pid()))
                    .orElse(OptionalLong.empty());
        } catch (SQLException e) {
            throw new HarnessException("cannot connect to the embedded PostgreSQL: " + e.getMessage(), e);
        }
    }
}
