package dev.fencing.verify;

import dev.fencing.harness.Durations;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The validated settings of one {@code verify} invocation. Flag names, their documentation and defaults are
 * constants here, like Kafka's {@code ConsumerConfig}: the names are what users type, do not rename them.
 *
 * <p>Immutable. The constructor checks every value and throws {@link IllegalArgumentException} with a message
 * naming the flag and the bad value.
 *
 * @param zookeeperConnect ZooKeeper connect string, or null for an embedded 3-node ensemble
 * @param jdbcUrl PostgreSQL JDBC URL, or null for an embedded server
 * @param jdbcUser user for {@code jdbcUrl}
 * @param jdbcPassword password for {@code jdbcUrl}, empty for none
 * @param kafkaBootstrap Kafka bootstrap servers, or null for an embedded broker
 * @param redisUri Redis URI, or null for an embedded server (used by the redis resource only)
 * @param resource the workload: the PostgreSQL and Kafka chain, Redis, or leader elections writing PostgreSQL
 * @param clients writer JVMs
 * @param resources resources (rows, locks, record keys)
 * @param duration workload time per run (a run goes on past it until each fault's minimum is reached, at most
 *     until {@link #hardLimit()})
 * @param seed seed of the workload's choices and of the fault schedule, the same for every run
 * @param faults the faults to inject
 * @param modes the runs, in order
 * @param sessionTimeout the writers' ZooKeeper session timeout
 * @param jsonFile the JSON summary, or null
 * @param htmlFile the HTML timeline
 * @param outDirectory where each run's histories and fault log go
 * @param keep leave the database, topics and lock nodes of a run on external servers
 * @param locks where the writers take their locks
 */
record VerifySettings(
        String zookeeperConnect,
        String jdbcUrl,
        String jdbcUser,
        String jdbcPassword,
        String kafkaBootstrap,
        String redisUri,
        Resource resource,
        int clients,
        int resources,
        Duration duration,
        long seed,
        Set<FaultKind> faults,
        List<Mode> modes,
        Duration sessionTimeout,
        Path jsonFile,
        Path htmlFile,
        Path outDirectory,
        boolean keep,
        LockService locks,
        int consumerConcurrency) {

    public static final String ZOOKEEPER_FLAG = "--zookeeper";
    public static final String ZOOKEEPER_DOC = "ZooKeeper connect string. Default: an embedded 3-node ensemble"
            + " (leader kills need it: with this flag they are skipped).";

    public static final String JDBC_URL_FLAG = "--jdbc-url";
    public static final String JDBC_URL_DOC = "PostgreSQL JDBC URL (jdbc:postgresql://host:port/db); the run creates"
            + " a database verify_<run> next to it (the user needs CREATEDB) and drops it at the end unless --keep."
            + " Default: an embedded server.";

    public static final String JDBC_USER_FLAG = "--jdbc-user";
    public static final String JDBC_USER_DOC = "User for " + JDBC_URL_FLAG + ". Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_JDBC_USER = "postgres";

    public static final String JDBC_PASSWORD_FLAG = "--jdbc-password";
    public static final String JDBC_PASSWORD_DOC =
            "Password for " + JDBC_URL_FLAG + " (or set " + VerifyCommand.JDBC_PASSWORD_ENV + "). Default: none.";

    public static final String KAFKA_FLAG = "--kafka";
    public static final String KAFKA_DOC = "Kafka bootstrap servers. Default: an embedded broker.";

    public static final String REDIS_FLAG = "--redis";
    public static final String REDIS_DOC = "Redis URI (redis://host:port[/db]) for --resource redis; the run"
            + " writes keys of its own there and deletes them at the end unless --keep. Default: "
            + "FENCING_REDIS_URL when set, else an embedded server.";

    public static final String RESOURCE_FLAG = "--resource";
    public static final String RESOURCE_DOC = "The workload: postgres (the whole chain under locks:"
            + " PostgreSQL rows through fencing-jdbc, Kafka records, consumers), redis (Redis keys through"
            + " fencing-redis under locks; faults: pause, partition, leader-kill) or election (leader elections, one"
            + " per resource, whose leaders write PostgreSQL rows many times per term through fencing-jdbc;"
            + " faults: pause, partition, leader-kill, session-expiry) or rwlock (a read/write lock per resource:"
            + " reads of PostgreSQL rows under read locks, checked against the read token before they are returned,"
            + " and writes through fencing-jdbc under write locks; faults: pause, read-pause, partition,"
            + " leader-kill). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_RESOURCE = "postgres";

    public static final String LOCKS_FLAG = "--locks";
    public static final String LOCKS_DOC = "Where the writers take their locks: zookeeper (fencing-zookeeper) or etcd"
            + " (fencing-etcd on an embedded 3-member etcd cluster, each grant's etcd lease as long as "
            + "--session-timeout; the postgres resource only; faults: all but session-expiry, a leader kill kills the"
            + " etcd leader, a partition cuts a writer from etcd alone). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_LOCKS = "zookeeper";

    public static final String CLIENTS_FLAG = "--clients";
    public static final String CLIENTS_DOC = "Writer JVMs, 1 to 32. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_CLIENTS = 6;

    public static final String RESOURCES_FLAG = "--resources";
    public static final String RESOURCES_DOC =
            "Resources (a row, a lock and a record key each), 1 to 100. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_RESOURCES = 4;

    public static final String DURATION_FLAG = "--duration";
    public static final String DURATION_DOC = "Workload time per run, 10s to 2h; a run goes on past it until every"
            + " fault has reached its minimum (pause 10, partition 3, leader-kill 1, backend-kill 2, consumer-crash 2,"
            + " rebalance 1, session-expiry 2, read-pause 3), at most three times as long and at least a minute longer. Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_DURATION = "60s";

    public static final String SEED_FLAG = "--seed";
    public static final String SEED_DOC =
            "Seed of the workload and of the fault schedule; every run uses it. Default: ${DEFAULT-VALUE}.";
    public static final long DEFAULT_SEED = 42;

    public static final String FAULTS_FLAG = "--faults";
    public static final String FAULTS_DOC = "Faults to inject, comma-separated: pause, partition, leader-kill,"
            + " backend-kill, consumer-crash, rebalance, session-expiry (election only), read-pause (rwlock only), or all, or none. Default:"
            + " ${DEFAULT-VALUE}.";
    public static final String DEFAULT_FAULTS = "all";

    public static final String MODE_FLAG = "--mode";
    public static final String MODE_DOC =
            "fenced, control, or both (fenced, then control with the same seed). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_MODE = "both";

    public static final String SESSION_TIMEOUT_FLAG = "--session-timeout";
    public static final String SESSION_TIMEOUT_DOC = "The writers' ZooKeeper session timeout, 1s to 10s with the"
            + " embedded ensemble (it grants 1 to 20 times its 500ms tick), 1s to 60s with " + ZOOKEEPER_FLAG
            + ". Pauses and partitions last longer than what the server grants. Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_SESSION_TIMEOUT = "2s";

    /** The durations users type, with examples at verify's scale in its messages. */
    static final Durations DURATIONS =
            new Durations("use for example 40s or 10m", "500ms, 40s, 1.5s, 10m, 1h or PT40S");

    public static final String JSON_FLAG = "--json";
    public static final String JSON_DOC = "Also write the summary as JSON to this file; its directory must exist.";

    public static final String HTML_FLAG = "--html";
    public static final String HTML_DOC = "Where to write the HTML timeline; its directory must exist. Default:"
            + " target/verify-report.html in the verify directory.";

    public static final String OUT_FLAG = "--out";
    public static final String OUT_DOC = "Directory for each run's histories and fault log (created if missing)."
            + " Default: target/verify-runs in the verify directory.";

    public static final String CONSUMER_CONCURRENCY_FLAG = "--consumer-concurrency";
    public static final String CONSUMER_CONCURRENCY_DOC = "The postgres resource's consumer members: 1 runs the"
            + " serial consumer, above 1 every member is key-parallel at that concurrency (a group's members all"
            + " run one mode: a group of both is not covered by fencing-kafka), 1 to 64. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_CONSUMER_CONCURRENCY = 1;

    public static final String KEEP_FLAG = "--keep";
    public static final String KEEP_DOC = "On external servers, leave the run's database, topics and lock nodes"
            + " (removed by default; embedded servers are removed whole).";

    /** The system property with the verify directory, set by the launcher; defaults go to its target/. */
    public static final String HOME_PROPERTY = "verify.home";

    static final Duration EMBEDDED_MAX_SESSION_TIMEOUT = Duration.ofSeconds(10);

    /** Settings whose writers take their locks on ZooKeeper. */
    VerifySettings(
            String zookeeperConnect,
            String jdbcUrl,
            String jdbcUser,
            String jdbcPassword,
            String kafkaBootstrap,
            String redisUri,
            Resource resource,
            int clients,
            int resources,
            Duration duration,
            long seed,
            Set<FaultKind> faults,
            List<Mode> modes,
            Duration sessionTimeout,
            Path jsonFile,
            Path htmlFile,
            Path outDirectory,
            boolean keep) {
        this(
                zookeeperConnect,
                jdbcUrl,
                jdbcUser,
                jdbcPassword,
                kafkaBootstrap,
                redisUri,
                resource,
                clients,
                resources,
                duration,
                seed,
                faults,
                modes,
                sessionTimeout,
                jsonFile,
                htmlFile,
                outDirectory,
                keep,
                LockService.ZOOKEEPER,
                1);
    }

    VerifySettings {
        Objects.requireNonNull(faults, "faults");
        Objects.requireNonNull(modes, "modes");
        Objects.requireNonNull(duration, DURATION_FLAG);
        Objects.requireNonNull(sessionTimeout, SESSION_TIMEOUT_FLAG);
        jdbcUser = jdbcUser == null ? DEFAULT_JDBC_USER : jdbcUser;
        jdbcPassword = jdbcPassword == null ? "" : jdbcPassword;
        zookeeperConnect = blankToNull(zookeeperConnect);
        jdbcUrl = blankToNull(jdbcUrl);
        kafkaBootstrap = blankToNull(kafkaBootstrap);
        redisUri = blankToNull(redisUri);
        Objects.requireNonNull(resource, RESOURCE_FLAG);
        if (redisUri != null && !redisUri.startsWith("redis://") && !redisUri.startsWith("rediss://")) {
            throw new IllegalArgumentException(REDIS_FLAG + " '" + redisUri + "' is not a redis://host:port URI");
        }
        requireRange(CLIENTS_FLAG, clients, 1, 32);
        requireRange(RESOURCES_FLAG, resources, 1, 100);
        requireRange(DURATION_FLAG, duration, Duration.ofSeconds(10), Duration.ofHours(2));
        Duration maxSession = zookeeperConnect == null ? EMBEDDED_MAX_SESSION_TIMEOUT : Duration.ofSeconds(60);
        requireRange(SESSION_TIMEOUT_FLAG, sessionTimeout, Duration.ofSeconds(1), maxSession);
        Objects.requireNonNull(locks, LOCKS_FLAG);
        requireRange(CONSUMER_CONCURRENCY_FLAG, consumerConcurrency, 1, 64);
        if (locks == LockService.ETCD) {
            if (resource != Resource.POSTGRES) {
                throw new IllegalArgumentException(LOCKS_FLAG + " etcd runs the postgres resource only, not "
                        + RESOURCE_FLAG + " " + resource.flagName());
            }
            if (zookeeperConnect != null) {
                throw new IllegalArgumentException(
                        ZOOKEEPER_FLAG + " names ZooKeeper, which " + LOCKS_FLAG + " etcd does not use; leave it out");
            }
            if (sessionTimeout.getNano() != 0 || sessionTimeout.getSeconds() < 2) {
                throw new IllegalArgumentException(SESSION_TIMEOUT_FLAG + " " + Durations.format(sessionTimeout)
                        + " is the etcd leases' TTL with " + LOCKS_FLAG + " etcd: whole seconds, at least 2s");
            }
        }
        if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:postgresql://")) {
            throw new IllegalArgumentException(
                    JDBC_URL_FLAG + " '" + jdbcUrl + "' is not a jdbc:postgresql://host:port/database URL");
        }
        if (modes.isEmpty()) {
            throw new IllegalArgumentException(MODE_FLAG + " names no run");
        }
        faults = Collections.unmodifiableSet(
                faults.isEmpty() ? EnumSet.noneOf(FaultKind.class) : EnumSet.copyOf(faults));
        modes = List.copyOf(modes);
        Objects.requireNonNull(htmlFile, HTML_FLAG);
        Objects.requireNonNull(outDirectory, OUT_FLAG);
    }

    /** Parses {@code --mode}. */
    static List<Mode> parseModes(String mode) {
        return switch (mode == null ? "" : mode.trim().toLowerCase(Locale.ROOT)) {
            case "fenced" -> List.of(Mode.FENCED);
            case "control" -> List.of(Mode.CONTROL);
            case "both" -> List.of(Mode.FENCED, Mode.CONTROL);
            default ->
                throw new IllegalArgumentException(MODE_FLAG + " '" + mode + "' is not one of fenced, control, both");
        };
    }

    /** The default of a file under the verify directory's target/ (the working directory's, without it). */
    static Path defaultUnderTarget(String name) {
        String home = System.getProperty(HOME_PROPERTY);
        return (home == null ? Path.of("target") : Path.of(home, "target")).resolve(name);
    }

    /** Whether every server this resource's runs use is embedded. */
    /**
     * How long a run may take at most, faults' minimums reached or not: three times the workload time, and at
     * least a minute more than it. A short run's faults can wait on each other (a leader kill restarts the session
     * clocks, so a frozen holder keeps its lock longer and a partition waits for a writer that reaches its point),
     * and its minimums are counts to reach, not a race against the clock.
     */
    Duration hardLimit() {
        Duration threeTimes = duration.multipliedBy(3);
        Duration aMinuteMore = duration.plusMinutes(1);
        return threeTimes.compareTo(aMinuteMore) >= 0 ? threeTimes : aMinuteMore;
    }

    boolean allEmbedded() {
        return zookeeperConnect == null
                && (resource.chain()
                        ? jdbcUrl == null && kafkaBootstrap == null
                        : resource.postgres() ? jdbcUrl == null : redisUri == null);
    }

    @Override
    public String toString() {
        return "resource " + resource.flagName() + ", locks " + locks.flagName() + ", clients " + clients
                + ", resources " + resources + ", duration "
                + Durations.format(duration)
                + ", seed " + seed + ", session timeout " + Durations.format(sessionTimeout) + ", faults "
                + faults.stream().sorted().map(FaultKind::flagName).toList() + ", runs "
                + modes.stream().map(Mode::label).toList();
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.trim();
    }

    private static void requireRange(String flag, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(flag + " " + value + " is out of range: " + min + " to " + max);
        }
    }

    private static void requireRange(String flag, Duration value, Duration min, Duration max) {
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new IllegalArgumentException(flag + " " + Durations.format(value) + " is out of range: "
                    + Durations.format(min) + " to " + Durations.format(max));
        }
    }
}
