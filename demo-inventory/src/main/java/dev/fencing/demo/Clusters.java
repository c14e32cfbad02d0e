package dev.fencing.demo;

import dev.fencing.testsupport.EmbeddedKafka;
import dev.fencing.testsupport.EmbeddedPostgresServer;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The three servers a run needs: the ones named by flags, checked for reachability, or embedded ones
 * (test-support) started here and stopped by {@link #close()}. Not thread-safe; the coordinator owns it.
 */
final class Clusters implements AutoCloseable {
    private static final int CONNECT_TIMEOUT_SECONDS = 10;
    /**
     * Where lock-client keeps the history of every lock path it created ({@code /fencing-lock-history<path>},
     * see docs/lock-client.md).
     */
    static final String LOCK_HISTORY_ROOT = "/fencing-lock-history";

    private final List<AutoCloseable> started = new ArrayList<>();
    private RunDirectory runDirectory;
    private String zookeeperConnect;
    private String jdbcUrl;
    private String jdbcUser;
    private String jdbcPassword;
    private String kafkaBootstrap;

    private Clusters() {}

    /**
     * Starts or reaches every server.
     *
     * @throws DemoException naming the flag and the address of a server that cannot be reached
     */
    static Clusters open(DemoSettings settings, PrintStream progress) {
        Clusters clusters = new Clusters();
        try {
            if (settings.zookeeperConnect() == null
                    || settings.jdbcUrl() == null
                    || settings.kafkaBootstrap() == null) {
                RunDirectory.removeAbandoned(Path.of(System.getProperty("java.io.tmpdir")), progress);
                clusters.runDirectory = RunDirectory.create();
                progress.println("  embedded servers' data in " + clusters.runDirectory.path());
            }
            clusters.openZooKeeper(settings, progress);
            clusters.openPostgres(settings, progress);
            clusters.openKafka(settings, progress);
            return clusters;
        } catch (RuntimeException e) {
            clusters.close();
            throw e;
        }
    }

    String zookeeperConnect() {
        return zookeeperConnect;
    }

    String jdbcUrl() {
        return jdbcUrl;
    }

    String jdbcUser() {
        return jdbcUser;
    }

    String jdbcPassword() {
        return jdbcPassword;
    }

    String kafkaBootstrap() {
        return kafkaBootstrap;
    }

    /** An unpooled data source for the coordinator. */
    PGSimpleDataSource dataSource() {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(jdbcUrl);
        dataSource.setUser(jdbcUser);
        if (!jdbcPassword.isEmpty()) {
            dataSource.setPassword(jdbcPassword);
        }
        dataSource.setLoginTimeout(CONNECT_TIMEOUT_SECONDS);
        return dataSource;
    }

    /** Creates a topic (replication factor 1) and waits until it exists. */
    void createTopic(String name, int partitions) {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while creating topic " + name, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new DemoException("could not create topic " + name + " on Kafka at " + kafkaBootstrap, e);
        }
    }

    /** Deletes topics this demo created; waits until Kafka confirms. */
    void deleteTopics(List<String> names) {
        try (Admin admin = admin()) {
            admin.deleteTopics(names).all().get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while deleting topics " + names, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new DemoException("could not delete topics " + names + " on Kafka at " + kafkaBootstrap, e);
        }
    }

    /**
     * Deletes the ZooKeeper node {@code path} and everything under it (the lock nodes of one run), and the
     * lock-client's history of those locks under {@value #LOCK_HISTORY_ROOT}{@code path}. Deleting a lock's
     * history is safe here only because the demo never uses these lock paths again (each run has a fresh
     * one) and the tokens they granted live only in this run's tables and topic.
     */
    void deleteLockTree(String path) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zookeeperConnect)
                .connectionTimeoutMs(CONNECT_TIMEOUT_SECONDS * 1_000)
                .retryPolicy(new RetryOneTime(100))
                .build();
        try {
            client.start();
            for (String tree : List.of(path, LOCK_HISTORY_ROOT + path)) {
                if (client.checkExists().forPath(tree) != null) {
                    client.delete().deletingChildrenIfNeeded().forPath(tree);
                }
            }
        } catch (Exception e) {
            throw new DemoException("could not delete " + path + " on ZooKeeper at " + zookeeperConnect, e);
        } finally {
            client.close();
        }
    }

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

    private void openZooKeeper(DemoSettings settings, PrintStream progress) {
        if (settings.zookeeperConnect() == null) {
            EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder()
                    .dataDirectory(runDirectory.path().resolve("zookeeper"))
                    .build();
            started.add(zk);
            zookeeperConnect = zk.connectString();
            progress.println("  embedded ZooKeeper at " + zookeeperConnect);
            return;
        }
        zookeeperConnect = settings.zookeeperConnect();
        CuratorFramework probe = CuratorFrameworkFactory.builder()
                .connectString(zookeeperConnect)
                .connectionTimeoutMs(CONNECT_TIMEOUT_SECONDS * 1_000)
                .retryPolicy(new RetryOneTime(100))
                .build();
        try {
            probe.start();
            if (!probe.blockUntilConnected(CONNECT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                throw new DemoException("cannot reach ZooKeeper at " + zookeeperConnect + " ("
                        + DemoSettings.ZOOKEEPER_FLAG + ") within " + CONNECT_TIMEOUT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while connecting to ZooKeeper at " + zookeeperConnect, e);
        } catch (IllegalArgumentException e) {
            throw new DemoException(
                    "bad ZooKeeper connect string '" + zookeeperConnect + "' (" + DemoSettings.ZOOKEEPER_FLAG + "): "
                            + e.getMessage(),
                    e);
        } finally {
            probe.close();
        }
        progress.println("  ZooKeeper at " + zookeeperConnect);
    }

    private void openPostgres(DemoSettings settings, PrintStream progress) {
        if (settings.jdbcUrl() == null) {
            EmbeddedPostgresServer server = EmbeddedPostgresServer.builder()
                    .dataDirectoryParent(runDirectory.path())
                    .build();
            started.add(server);
            jdbcUrl = server.jdbcUrl();
            jdbcUser = server.user();
            jdbcPassword = server.password();
            watchPostmaster();
            progress.println("  embedded PostgreSQL at " + jdbcUrl);
            return;
        }
        jdbcUrl = settings.jdbcUrl();
        jdbcUser = settings.jdbcUser();
        jdbcPassword = settings.jdbcPassword();
        try (Connection connection = dataSource().getConnection()) {
            connection.isValid(CONNECT_TIMEOUT_SECONDS);
        } catch (SQLException e) {
            throw new DemoException(
                    "cannot connect to PostgreSQL at " + jdbcUrl + " (" + DemoSettings.JDBC_URL_FLAG + ") as "
                            + jdbcUser + ": " + e.getMessage(),
                    e);
        }
        progress.println("  PostgreSQL at " + jdbcUrl);
    }

    /**
     * The embedded PostgreSQL server runs as a daemon, not as a child of this JVM: if this JVM is killed
     * outright (no shutdown hook runs) it would keep running. A small watchdog process stops it (fast
     * shutdown, then immediate shutdown if it is still up 10 s later) once its stdin, a pipe from this JVM,
     * reaches end-of-file, which happens when this JVM is gone; {@link #close()}
     * kills the watchdog before stopping the server.
     */
    private void watchPostmaster() {
        java.util.Optional<ProcessHandle> postmaster;
        try (Connection connection = dataSource().getConnection();
                java.sql.Statement statement = connection.createStatement();
                java.sql.ResultSet result = statement.executeQuery("SELECT pg_backend_pid()")) {
            result.next();
            // While the connection is open: its backend exits when it closes, and then has no parent to find.
            // Looking it up after the close lost that race now and then, and the demo ran with no watchdog.
            postmaster = ProcessHandle.of(result.getLong(1)).flatMap(ProcessHandle::parent);
        } catch (SQLException e) {
            throw new DemoException(
                    "cannot connect to the embedded PostgreSQL at " + jdbcUrl + ": " + e.getMessage(), e);
        }
        if (postmaster.isEmpty()) {
            throw new DemoException("cannot find the process of the embedded PostgreSQL at " + jdbcUrl
                    + " to watch it; it would outlive this JVM if this JVM were killed");
        }
        try {
            Process watchdog = new ProcessBuilder(
                            "sh",
                            "-c",
                            // Waits for EOF on its stdin, a pipe only this JVM holds open: it closes
                            // when this JVM dies, however it dies. Polling this JVM's pid with kill -0
                            // was fooled when the pid was reused (pid_max is 32768 here, and threads
                            // draw from the same ids).
                            // Then it removes the run's server data, which this JVM can no longer do.
                            "trap '' INT TERM HUP; cat >/dev/null; pg="
                                    + postmaster.get().pid()
                                    + "; kill -INT $pg; i=0; while kill -0 $pg 2>/dev/null && [ $i -lt 20 ];"
                                    + " do sleep 0.5; i=$((i+1)); done; kill -QUIT $pg 2>/dev/null; sleep 1;"
                                    + " rm -rf '" + runDirectory.path() + "'")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            started.add(watchdog::destroyForcibly);
        } catch (java.io.IOException e) {
            throw new DemoException("cannot start the watchdog of the embedded PostgreSQL: " + e.getMessage(), e);
        }
    }

    private void openKafka(DemoSettings settings, PrintStream progress) {
        if (settings.kafkaBootstrap() == null) {
            EmbeddedKafka kafka = EmbeddedKafka.builder()
                    .logDirectoryParent(runDirectory.path())
                    .build();
            started.add(kafka);
            kafkaBootstrap = kafka.bootstrapServers();
            progress.println("  embedded Kafka at " + kafkaBootstrap);
            return;
        }
        kafkaBootstrap = settings.kafkaBootstrap();
        try (Admin admin = admin()) {
            admin.describeCluster().nodes().get(CONNECT_TIMEOUT_SECONDS + 5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while connecting to Kafka at " + kafkaBootstrap, e);
        } catch (ExecutionException | TimeoutException | org.apache.kafka.common.KafkaException e) {
            throw new DemoException(
                    "cannot reach Kafka at " + kafkaBootstrap + " (" + DemoSettings.KAFKA_FLAG + ") within "
                            + (CONNECT_TIMEOUT_SECONDS + 5) + " s",
                    e);
        }
        progress.println("  Kafka at " + kafkaBootstrap);
    }

    private Admin admin() {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, CONNECT_TIMEOUT_SECONDS * 1_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, CONNECT_TIMEOUT_SECONDS * 1_000));
    }
}
