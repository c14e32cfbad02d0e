package dev.fencing.harness;

import dev.fencing.testsupport.EmbeddedKafka;
import dev.fencing.testsupport.EmbeddedPostgresServer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * What a run's coordinator started (embedded servers, watchdogs, network namespaces) and the {@link RunDirectory}
 * their data is in: {@link #close()} stops them newest first, quietly, then deletes the directory. Not
 * thread-safe; the coordinator owns it.
 *
 * <pre>{@code
 * StartedServers started = new StartedServers();
 * Path data = started.runDirectory("demo-inventory-run-", "a demo run", progress);
 * EmbeddedZooKeeper zk = started.add(EmbeddedZooKeeper.builder().dataDirectory(data.resolve("zk")).build());
 * ...
 * started.close();
 * }</pre>
 */
public final class StartedServers implements AutoCloseable {
    private final List<AutoCloseable> started = new ArrayList<>();
    private RunDirectory runDirectory;

    /**
     * Removes the run directories named {@code prefix...} that {@code whose} left behind ({@link
     * RunDirectory#removeAbandoned}), creates this run's, says where on {@code progress}, and returns its path.
     */
    public Path runDirectory(String prefix, String whose, PrintStream progress) {
        RunDirectory.removeAbandoned(Path.of(System.getProperty("java.io.tmpdir")), prefix, whose, progress);
        runDirectory = RunDirectory.create(prefix);
        progress.println("  embedded servers' data in " + runDirectory.path());
        return runDirectory.path();
    }

    /**
     * The Kafka cluster a run uses: the one at {@code given} (its bootstrap servers, checked to answer), or, when
     * {@code given} is null, an embedded broker listening on {@code host} with its log in the run directory
     * ({@link #runDirectory} first), stopped on {@link #close()}. Says which on {@code progress}; returns the
     * bootstrap servers.
     *
     * @param flag the flag that names a given cluster, for messages
     * @throws HarnessException naming the flag and the address when a given cluster does not answer
     */
    public String kafka(String given, String flag, String host, PrintStream progress) {
        if (given != null) {
            KafkaTopics.requireReachable(given, flag);
            progress.println("  Kafka at " + given);
            return given;
        }
        EmbeddedKafka kafka = add(EmbeddedKafka.builder()
                .logDirectoryParent(runDirectory.path())
                .host(host)
                .build());
        progress.println("  embedded Kafka at " + kafka.bootstrapServers());
        return kafka.bootstrapServers();
    }

    /**
     * The PostgreSQL server a run uses.
     *
     * @param jdbcUrl its URL (for an embedded one, of its default database)
     * @param postmasterPid the embedded server's postmaster, to {@link #watch} (it is a daemon, not a child of this
     *     JVM); empty for a given server, or when it could not be found
     */
    public record Postgres(String jdbcUrl, String user, String password, boolean embedded, OptionalLong postmasterPid) {
        /** An unpooled data source on {@code url} (this server's, with another database) as this server's user. */
        public DataSource dataSource(String url) {
            return PostgresAccess.dataSource(url, user, password);
        }

        /** An unpooled data source on this server. */
        public DataSource dataSource() {
            return dataSource(jdbcUrl);
        }
    }

    /**
     * The PostgreSQL server a run uses: the one at {@code givenUrl}, checked to accept a connection as {@code user},
     * or, when {@code givenUrl} is null, an embedded one with its data in the run directory ({@link #runDirectory}
     * first), configured further by {@code embedded} (more addresses to listen on), stopped on {@link #close()}.
     * Says so on {@code progress} when it starts one; a given server is the caller's to announce.
     *
     * @param flag the flag that names a given server, for messages
     * @throws HarnessException naming the flag, the address and the user when a given server does not answer
     */
    public Postgres postgres(
            String givenUrl,
            String user,
            String password,
            String flag,
            Consumer<EmbeddedPostgresServer.Builder> embedded,
            PrintStream progress) {
        if (givenUrl != null) {
            Postgres given = new Postgres(givenUrl, user, password, false, OptionalLong.empty());
            try (Connection connection = given.dataSource().getConnection()) {
                connection.isValid(ZooKeeperAccess.CONNECT_TIMEOUT_SECONDS);
            } catch (SQLException e) {
                throw new HarnessException(
                        "cannot connect to PostgreSQL at " + givenUrl + " (" + flag + ") as " + user + ": "
                                + e.getMessage(),
                        e);
            }
            return given;
        }
        EmbeddedPostgresServer.Builder builder =
                EmbeddedPostgresServer.builder().dataDirectoryParent(runDirectory.path());
        embedded.accept(builder);
        EmbeddedPostgresServer server = add(builder.build());
        progress.println("  embedded PostgreSQL at " + server.jdbcUrl());
        OptionalLong postmaster = PostgresAccess.postmasterPid(
                PostgresAccess.dataSource(server.jdbcUrl(), server.user(), server.password()));
        return new Postgres(server.jdbcUrl(), server.user(), server.password(), true, postmaster);
    }

    /**
     * Starts a {@link Watchdog} that, should this JVM be killed outright (no shutdown hook, no {@link #close()}),
     * runs {@code commands} (stopping what would outlive it: the postmaster, a Redis, network namespaces) and then
     * removes the run directory; {@link #close()} stops it before what was started earlier. Call it once, when
     * everything that would outlive this JVM is started.
     */
    public void watch(List<String> commands) {
        List<String> all = new ArrayList<>(commands);
        if (runDirectory != null) {
            all.add("sleep 1");
            all.add("rm -rf '" + runDirectory.path() + "'");
        }
        if (!all.isEmpty()) {
            add(Watchdog.start(all));
        }
    }

    /** Stops {@code server} on {@link #close()}, before everything added earlier. Returns it. */
    public <T extends AutoCloseable> T add(T server) {
        started.add(server);
        return server;
    }

    /** Stops everything added, newest first, then deletes the run directory. Safe twice. */
    @Override
    public void close() {
        for (int i = started.size() - 1; i >= 0; i--) {
            try {
                started.get(i).close();
            } catch (Exception e) {
                // stopping an embedded server at exit: nothing left to do about a failure
            }
        }
        started.clear();
        if (runDirectory != null) {
            runDirectory.delete();
            runDirectory = null;
        }
    }
}
