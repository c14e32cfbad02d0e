package dev.fencing.demo;

import dev.fencing.harness.PostgresAccess;
import dev.fencing.harness.StartedServers;
import dev.fencing.harness.Watchdog;
import dev.fencing.harness.ZooKeeperAccess;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.io.PrintStream;
import java.nio.file.Path;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The three servers a run needs: the ones named by flags, checked for reachability, or embedded ones
 * (fencing-test-support) started here and stopped by {@link #close()}: one ZooKeeper, one PostgreSQL, one Kafka broker,
 * their data in one run directory ({@link StartedServers}). Not thread-safe; the coordinator owns it.
 */
final class Clusters implements AutoCloseable {
    static final String RUN_DIRECTORY_PREFIX = "demo-inventory-run-";

    private final StartedServers started = new StartedServers();
    private Path runDirectory;
    private String zookeeperConnect;
    private String jdbcUrl;
    private String jdbcUser;
    private String jdbcPassword;
    private String kafkaBootstrap;

    private Clusters() {}

    /**
     * Starts or reaches every server.
     *
     * @throws dev.fencing.harness.HarnessException naming the flag and the address of a server that cannot be
     *     reached
     */
    static Clusters open(DemoSettings settings, PrintStream progress) {
        Clusters clusters = new Clusters();
        try {
            if (settings.zookeeperConnect() == null
                    || settings.jdbcUrl() == null
                    || settings.kafkaBootstrap() == null) {
                clusters.runDirectory = clusters.started.runDirectory(RUN_DIRECTORY_PREFIX, "a demo run", progress);
            }
            clusters.openZooKeeper(settings, progress);
            clusters.openPostgres(settings, progress);
            clusters.kafkaBootstrap =
                    clusters.started.kafka(settings.kafkaBootstrap(), DemoSettings.KAFKA_FLAG, "127.0.0.1", progress);
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
        return PostgresAccess.dataSource(jdbcUrl, jdbcUser, jdbcPassword);
    }

    @Override
    public void close() {
        started.close();
    }

    private void openZooKeeper(DemoSettings settings, PrintStream progress) {
        if (settings.zookeeperConnect() == null) {
            EmbeddedZooKeeper zk = started.add(EmbeddedZooKeeper.builder()
                    .dataDirectory(runDirectory.resolve("zookeeper"))
                    .build());
            zookeeperConnect = zk.connectString();
            progress.println("  embedded ZooKeeper at " + zookeeperConnect);
            return;
        }
        zookeeperConnect = settings.zookeeperConnect();
        ZooKeeperAccess.requireReachable(zookeeperConnect, DemoSettings.ZOOKEEPER_FLAG);
        progress.println("  ZooKeeper at " + zookeeperConnect);
    }

    private void openPostgres(DemoSettings settings, PrintStream progress) {
        StartedServers.Postgres postgres = started.postgres(
                settings.jdbcUrl(),
                settings.jdbcUser(),
                settings.jdbcPassword(),
                DemoSettings.JDBC_URL_FLAG,
                builder -> {},
                progress);
        jdbcUrl = postgres.jdbcUrl();
        jdbcUser = postgres.user();
        jdbcPassword = postgres.password();
        if (!postgres.embedded()) {
            progress.println("  PostgreSQL at " + jdbcUrl);
            return;
        }
        // the embedded server is a daemon, not a child of this JVM: if this JVM is killed outright it would keep
        // running, so a watchdog stops it then and removes the run's data
        if (postgres.postmasterPid().isEmpty()) {
            throw new DemoException("cannot find the process of the embedded PostgreSQL at " + jdbcUrl
                    + " to watch it; it would outlive this JVM if this JVM were killed");
        }
        started.watch(Watchdog.stopPostgres(postgres.postmasterPid().getAsLong()));
    }
}
