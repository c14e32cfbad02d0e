package dev.fencing.verify;

import dev.fencing.harness.KafkaTopics;
import dev.fencing.harness.PostgresAccess;
import dev.fencing.harness.StartedServers;
import dev.fencing.harness.Watchdog;
import dev.fencing.harness.ZooKeeperAccess;
import dev.fencing.testsupport.EmbeddedEtcdCluster;
import dev.fencing.testsupport.EmbeddedRedisServer;
import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import dev.fencing.testsupport.NetworkNamespace;
import dev.fencing.testsupport.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.flywaydb.core.Flyway;

/**
 * The servers a run attacks: the ones named by flags (checked for reachability), or embedded ones started here
 * (a 3-node ZooKeeper ensemble, or with {@code --locks etcd} a 3-member etcd cluster, and PostgreSQL and a Kafka broker for the postgres resource, PostgreSQL for the
 * election resource, or Redis for the redis resource) and stopped by {@link #close()}. With partitions
 * possible, the embedded servers listen on the {@link VerifyNetwork}'s host addresses so that writers in their
 * namespaces reach them. Each invocation works in a database of its own ({@code verify_<run id>}), with the
 * toolkit's migrations. Not thread-safe for opening and closing; the accessors may be used from any thread.
 */
final class Servers implements AutoCloseable {
    static final String RUN_DIRECTORY_PREFIX = "verify-run-";
    private static final int CONNECT_TIMEOUT_SECONDS = ZooKeeperAccess.CONNECT_TIMEOUT_SECONDS;

    private final StartedServers started = new StartedServers();
    private final String runId;
    private VerifyNetwork network;
    private String partitionUnavailable;
    private String leaderKillUnavailable;
    private EmbeddedZooKeeperEnsemble ensemble;
    private EmbeddedEtcdCluster etcd;
    private String zookeeperConnect;
    private String serverJdbcUrl;
    private String jdbcUrl;
    private String clientJdbcUrl;
    private String database;
    private String jdbcUser;
    private String jdbcPassword;
    private String kafkaBootstrap;
    private boolean externalDatabase;
    private boolean keepDatabase;
    private long postmasterPid = -1;
    private String redisUri;
    private String clientRedisUri;
    private long redisPid = -1;
    private boolean externalRedis;

    private Servers(String runId) {
        this.runId = runId;
    }

    /**
     * Starts or reaches every server, and makes the network when partitions are asked for and possible.
     *
     * @throws VerifyException naming the flag and the address of a server that cannot be reached
     */
    static Servers open(VerifySettings settings, String runId, PrintStream progress) {
        Servers servers = new Servers(runId);
        try {
            servers.openAll(settings, progress);
            return servers;
        } catch (RuntimeException e) {
            servers.close();
            throw e;
        }
    }

    private void openAll(VerifySettings settings, PrintStream progress) {
        if (settings.faults().contains(FaultKind.PARTITION)) {
            if (!settings.allEmbedded()) {
                partitionUnavailable = "they need the embedded servers (writers in network namespaces reach only"
                        + " addresses on this host)";
            } else {
                partitionUnavailable = NetworkNamespace.unavailableReason().orElse(null);
            }
        }
        if (settings.faults().contains(FaultKind.LEADER_KILL) && settings.zookeeperConnect() != null) {
            leaderKillUnavailable =
                    "they need the embedded ensemble, and " + VerifySettings.ZOOKEEPER_FLAG + " names an external one";
        }
        if (settings.zookeeperConnect() == null || settings.jdbcUrl() == null || settings.kafkaBootstrap() == null) {
            started.runDirectory(RUN_DIRECTORY_PREFIX, "a run", progress);
        }
        if (settings.faults().contains(FaultKind.PARTITION) && partitionUnavailable == null) {
            List<String> leftovers = VerifyNetwork.removeAbandoned();
            if (!leftovers.isEmpty()) {
                progress.println("  removed network namespaces left by runs that did not end cleanly: " + leftovers);
            }
            network = VerifyNetwork.create(settings.clients());
            started.add(network);
            progress.println(
                    "  writers in network namespaces; " + settings.locks().displayName() + " on "
                            + network.lockAddress() + ", " + dataServers(settings.resource()) + " on "
                            + network.dataAddress());
        }
        if (settings.locks() == LockService.ETCD) {
            openEtcd(progress);
        } else {
            openZooKeeper(settings, progress);
        }
        if (settings.resource().postgres()) {
            openPostgres(settings, progress);
        } else {
            openRedis(settings, progress);
        }
        if (settings.resource().chain()) {
            kafkaBootstrap = started.kafka(
                    settings.kafkaBootstrap(),
                    VerifySettings.KAFKA_FLAG,
                    network == null ? "127.0.0.1" : network.dataAddress(),
                    progress);
        }
        startWatchdog();
    }

    private static String dataServers(Resource resource) {
        return resource.chain() ? "PostgreSQL and Kafka" : resource.postgres() ? "PostgreSQL" : "Redis";
    }

    /** Why partitions cannot run, or empty when they can. */
    Optional<String> partitionUnavailable() {
        return Optional.ofNullable(partitionUnavailable);
    }

    /** Why leader kills cannot run, or empty when they can. */
    Optional<String> leaderKillUnavailable() {
        return Optional.ofNullable(leaderKillUnavailable);
    }

    /** The network, when partitions run. */
    Optional<VerifyNetwork> network() {
        return Optional.ofNullable(network);
    }

    /** The embedded ensemble, when there is one. */
    Optional<EmbeddedZooKeeperEnsemble> ensemble() {
        return Optional.ofNullable(ensemble);
    }

    String zookeeperConnect() {
        return zookeeperConnect;
    }

    /** The embedded etcd cluster, when the writers take their locks on etcd. */
    Optional<EmbeddedEtcdCluster> etcd() {
        return Optional.ofNullable(etcd);
    }

    /** The run's database, for this host's processes. */
    String jdbcUrl() {
        return jdbcUrl;
    }

    /** The run's database, for writers (through the network's data address when there is a network). */
    String clientJdbcUrl() {
        return clientJdbcUrl;
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

    String database() {
        return database;
    }

    /** Redis, for this host's processes (the redis resource only). */
    String redisUri() {
        return redisUri;
    }

    /** Redis, for writers (through the network's data address when there is a network). */
    String clientRedisUri() {
        return clientRedisUri;
    }

    /** An unpooled data source on the run's database. */
    DataSource dataSource() {
        return dataSource(jdbcUrl);
    }

    private DataSource dataSource(String url) {
        return PostgresAccess.dataSource(url, jdbcUser, jdbcPassword);
    }

    /** What ZooKeeper grants a client asking for {@code requested}. */
    Duration grantedSessionTimeout(Duration requested) {
        return ZooKeeperAccess.grantedSessionTimeout(zookeeperConnect, requested);
    }

    /** Creates a topic (replication factor 1) and waits until it exists. */
    void createTopic(String name, int partitions) {
        KafkaTopics.create(kafkaBootstrap, name, partitions);
    }

    /** Deletes topics this run made, on external servers (embedded ones go away whole). */
    void deleteTopics(List<String> names) {
        KafkaTopics.delete(kafkaBootstrap, names);
    }

    /** Deletes a run's lock nodes and their lock history ({@link ZooKeeperAccess#deleteLockTree}). */
    void deleteTree(String path) {
        ZooKeeperAccess.deleteLockTree(zookeeperConnect, path);
    }

    Admin admin() {
        return KafkaTopics.admin(kafkaBootstrap);
    }

    /** Whether this run leaves things on servers it does not own (external ones). */
    boolean external() {
        return externalDatabase || externalRedis;
    }

    @Override
    public void close() {
        if (externalDatabase && database != null && !keepDatabase) {
            try (Connection connection = dataSource(serverJdbcUrl).getConnection();
                    Statement statement = connection.createStatement()) {
                statement.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
            } catch (SQLException e) {
                // the next run uses a database of its own; say nothing at exit
            }
        }
        started.close();
    }

    /** Leave the run's database on an external server. */
    void keepDatabase() {
        keepDatabase = true;
    }

    private void openZooKeeper(VerifySettings settings, PrintStream progress) {
        if (settings.zookeeperConnect() == null) {
            ensemble = EmbeddedZooKeeperEnsemble.start(3, network == null ? "127.0.0.1" : network.lockAddress());
            started.add(ensemble);
            zookeeperConnect = ensemble.connectString();
            progress.println("  embedded ZooKeeper ensemble of 3 at " + zookeeperConnect);
            return;
        }
        zookeeperConnect = settings.zookeeperConnect();
        grantedSessionTimeout(settings.sessionTimeout()); // reachability, with the flag named on failure
        progress.println("  ZooKeeper at " + zookeeperConnect);
    }

    /**
     * Starts 3 etcd members, on the network's lock address when there is a network (a partition cuts a writer
     * from them alone), as child processes that {@link #close()} kills.
     */
    private void openEtcd(PrintStream progress) {
        etcd = EmbeddedEtcdCluster.builder()
                .members(3)
                .host(network == null ? "127.0.0.1" : network.lockAddress())
                .build();
        started.add(etcd);
        progress.println("  embedded etcd cluster of 3 at " + String.join(",", etcd.endpoints()));
    }

    private void openPostgres(VerifySettings settings, PrintStream progress) {
        StartedServers.Postgres server = started.postgres(
                settings.jdbcUrl(),
                settings.jdbcUser(),
                settings.jdbcPassword(),
                VerifySettings.JDBC_URL_FLAG,
                builder -> {
                    if (network != null) {
                        builder.alsoListenOn(network.dataAddress(), network.clientNetwork());
                    }
                },
                progress);
        String host = server.embedded() && network != null ? network.dataAddress() : "localhost";
        serverJdbcUrl = server.jdbcUrl();
        jdbcUser = server.user();
        jdbcPassword = server.password();
        externalDatabase = !server.embedded();
        postmasterPid = server.postmasterPid().orElse(-1L);
        database = "verify_" + runId;
        try (Connection connection = dataSource(serverJdbcUrl).getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE DATABASE " + database);
        } catch (SQLException e) {
            throw new VerifyException(
                    "cannot create database " + database + " on PostgreSQL at " + serverJdbcUrl
                            + (externalDatabase
                                    ? " (" + VerifySettings.JDBC_URL_FLAG + "; the user needs CREATEDB)"
                                    : "")
                            + ": " + e.getMessage(),
                    e);
        }
        jdbcUrl = withDatabase(serverJdbcUrl, database, null);
        clientJdbcUrl = network == null ? jdbcUrl : withDatabase(serverJdbcUrl, database, host);
        Flyway.configure()
                .dataSource(dataSource())
                .schemas("fencing")
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        if (settings.jdbcUrl() != null) {
            progress.println("  PostgreSQL at " + serverJdbcUrl + ", database " + database);
        }
    }

    /**
     * Starts an embedded Redis (on the network's data address too, when there is a network) or reaches the one
     * named by {@code --redis}.
     */
    private void openRedis(VerifySettings settings, PrintStream progress) {
        if (settings.redisUri() == null) {
            EmbeddedRedisServer.Builder builder = EmbeddedRedisServer.builder();
            if (network != null) {
                builder.setting("bind", "127.0.0.1 " + network.dataAddress());
            }
            EmbeddedRedisServer server = builder.build();
            started.add(server);
            redisUri = server.uri();
            clientRedisUri = network == null ? redisUri : "redis://" + network.dataAddress() + ":" + server.port();
            redisPid = server.pid();
            progress.println("  embedded Redis at " + redisUri);
            return;
        }
        redisUri = settings.redisUri();
        clientRedisUri = redisUri;
        externalRedis = true;
        RedisURI uri = RedisURI.create(redisUri);
        uri.setTimeout(Duration.ofSeconds(CONNECT_TIMEOUT_SECONDS));
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            connection.sync().ping();
        } catch (RuntimeException e) {
            throw new VerifyException(
                    "cannot reach Redis at " + redisUri + " (" + VerifySettings.REDIS_FLAG + " or "
                            + RedisServers.URL_ENV + "): " + e.getMessage(),
                    e);
        } finally {
            client.shutdown();
        }
        progress.println("  Redis at " + redisUri);
    }

    /**
     * What would outlive this JVM if it were killed outright: the embedded PostgreSQL (a daemon, not a child of this
     * JVM), Redis, the network namespaces; the harness's watchdog stops them then, and removes the run's data.
     */
    private void startWatchdog() {
        List<String> commands = new ArrayList<>();
        if (redisPid > 0) {
            commands.add("kill -KILL " + redisPid);
        }
        if (postmasterPid > 0) {
            commands.addAll(Watchdog.stopPostgres(postmasterPid));
        }
        if (network != null) {
            for (String name : network.names()) {
                commands.add("ip netns del " + name);
            }
        }
        started.watch(commands);
    }

    /** A random run id: lower-case letters and digits, usable in database, topic and path names. */
    static String newRunId() {
        return Long.toString(System.currentTimeMillis() / 1000 % 1_000_000_000L, 36)
                + Long.toString(ThreadLocalRandom.current().nextInt(36 * 36), 36);
    }

    /** Replaces the database (and, if given, the host) of a {@code jdbc:postgresql://host:port/db?params} URL. */
    static String withDatabase(String jdbcUrl, String database, String host) {
        String prefix = "jdbc:postgresql://";
        if (!jdbcUrl.toLowerCase(Locale.ROOT).startsWith(prefix)) {
            throw new IllegalArgumentException("not a jdbc:postgresql:// URL: " + jdbcUrl);
        }
        int hostsEnd = jdbcUrl.indexOf('/', prefix.length());
        int query = jdbcUrl.indexOf('?', prefix.length());
        String params = query >= 0 ? jdbcUrl.substring(query) : "";
        String hosts;
        if (hostsEnd >= 0 && (query < 0 || hostsEnd < query)) {
            hosts = jdbcUrl.substring(prefix.length(), hostsEnd);
        } else {
            hosts = query >= 0 ? jdbcUrl.substring(prefix.length(), query) : jdbcUrl.substring(prefix.length());
        }
        if (host != null) {
            int colon = hosts.lastIndexOf(':');
            hosts = host + (colon >= 0 ? hosts.substring(colon) : "");
        }
        // zonky's URL names the user and password as parameters; the data sources set them themselves
        return prefix + hosts + "/" + database + params;
    }
}
