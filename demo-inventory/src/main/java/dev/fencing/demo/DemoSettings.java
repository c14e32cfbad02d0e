package dev.fencing.demo;

import dev.fencing.harness.Durations;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The validated settings of one demo invocation: where the servers are and what the workload looks like.
 * The flag names, their documentation and their defaults are constants here, in the style of Kafka's
 * {@code ConsumerConfig}; the names are what users type, so do not rename them lightly.
 *
 * <p>Immutable. The constructor checks every value and throws {@link IllegalArgumentException} with a
 * message that names the flag and the bad value, so the CLI can print it as it is.
 *
 * <pre>{@code
 * DemoSettings settings = DemoSettings.defaults().withDuration(Duration.ofSeconds(10));
 * }</pre>
 *
 * @param zookeeperConnect ZooKeeper connect string, or {@code null} for an embedded server
 * @param jdbcUrl PostgreSQL JDBC URL, or {@code null} for an embedded server
 * @param jdbcUser user for {@code jdbcUrl}
 * @param jdbcPassword password for {@code jdbcUrl}, empty for none
 * @param kafkaBootstrap Kafka bootstrap servers, or {@code null} for an embedded broker
 * @param workers number of worker JVMs
 * @param skus number of SKUs, each with its own lock and stock row
 * @param initialStock units of each SKU at the start of a run
 * @param duration longest time a run's workload lasts (a run ends earlier when everything is sold out)
 * @param pause how long one injected SIGSTOP lasts at least
 * @param pauseEvery time between the end of one pause and the arming of the next
 * @param sessionTimeout the workers' ZooKeeper session timeout
 * @param work simulated work between a worker's read and its write
 * @param seed seed of the workers' SKU and quantity choices and of the pause schedule
 * @param modes the runs, in order
 * @param jsonFile where to write the JSON summary, or {@code null}
 * @param htmlFile where to write the HTML report, or {@code null}
 * @param minLandedPauses the fewest landed pauses (another worker took the SKU over while the paused one was
 *     frozen) a run needs to count as evidence
 * @param keep whether to leave the topics, lock nodes and consumer watermarks a run created on external
 *     servers
 */
record DemoSettings(
        String zookeeperConnect,
        String jdbcUrl,
        String jdbcUser,
        String jdbcPassword,
        String kafkaBootstrap,
        int workers,
        int skus,
        int initialStock,
        Duration duration,
        Duration pause,
        Duration pauseEvery,
        Duration sessionTimeout,
        Duration work,
        long seed,
        List<Mode> modes,
        Path jsonFile,
        Path htmlFile,
        int minLandedPauses,
        boolean keep) {

    public static final String ZOOKEEPER_FLAG = "--zookeeper";
    public static final String ZOOKEEPER_DOC =
            "ZooKeeper connect string (host:port[,host:port...]). Default: an embedded server.";

    public static final String JDBC_URL_FLAG = "--jdbc-url";
    public static final String JDBC_URL_DOC =
            "PostgreSQL JDBC URL (jdbc:postgresql://host:port/db); the demo creates schemas demo_unfenced,"
                    + " demo_lease_check and demo_fenced there. Default: an embedded server.";

    public static final String JDBC_USER_FLAG = "--jdbc-user";
    public static final String JDBC_USER_DOC = "User for " + JDBC_URL_FLAG + ". Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_JDBC_USER = "postgres";

    public static final String JDBC_PASSWORD_FLAG = "--jdbc-password";
    public static final String JDBC_PASSWORD_DOC =
            "Password for " + JDBC_URL_FLAG + " (or set " + InventoryDemo.JDBC_PASSWORD_ENV + "). Default: none.";

    public static final String KAFKA_FLAG = "--kafka";
    public static final String KAFKA_DOC = "Kafka bootstrap servers (host:port[,...]). Default: an embedded broker.";

    public static final String WORKERS_FLAG = "--workers";
    public static final String WORKERS_DOC =
            "Worker JVMs, 1 to 32 (each is a JVM of up to 256 MB). Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_WORKERS = 4;

    public static final String SKUS_FLAG = "--skus";
    public static final String SKUS_DOC =
            "SKUs, each with its own lock and stock row, 1 to 1000. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_SKUS = 2;

    public static final String INITIAL_STOCK_FLAG = "--initial-stock";
    public static final String INITIAL_STOCK_DOC =
            "Units of each SKU at the start of a run, 1 to 1000000. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_INITIAL_STOCK = 150;

    public static final String DURATION_FLAG = "--duration";
    public static final String DURATION_DOC =
            "Longest workload time per run, 3s to 1h; a run also ends once everything is sold out."
                    + " Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_DURATION = "40s";

    public static final String PAUSE_FLAG = "--pause";
    public static final String PAUSE_DOC = "Length of one SIGSTOP of a lock holder, 100ms to 5m; must be longer than"
            + " the session timeout ZooKeeper grants. The worker stays frozen past it until another worker has"
            + " written the SKU (at most twice as long). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_PAUSE = "3s";

    public static final String PAUSE_EVERY_FLAG = "--pause-every";
    public static final String PAUSE_EVERY_DOC =
            "Time from the end of one pause to the next, 100ms to 1h. Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_PAUSE_EVERY = "1s";

    public static final String SESSION_TIMEOUT_FLAG = "--session-timeout";
    public static final String SESSION_TIMEOUT_DOC =
            "The workers' ZooKeeper session timeout, 1s to 10s with the embedded server (it grants at most 20"
                    + " times its 500ms tickTime), 1s to 60s with --zookeeper (the server may grant another value;"
                    + " the demo reads what it granted before starting anything else). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_SESSION_TIMEOUT = "2s";

    public static final String WORK_FLAG = "--work";
    public static final String WORK_DOC =
            "Simulated work between a worker's read and its write, 0 to 10s. Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_WORK = "80ms";

    public static final String SEED_FLAG = "--seed";
    public static final String SEED_DOC =
            "Seed of the workload and the pause schedule; both runs use it. Default: ${DEFAULT-VALUE}.";
    public static final long DEFAULT_SEED = 42;

    public static final String MODE_FLAG = "--mode";
    public static final String MODE_DOC = "unfenced, lease-check, fenced, both (unfenced then fenced) or all (the"
            + " three). Default: ${DEFAULT-VALUE}.";
    public static final String DEFAULT_MODE = "both";

    public static final String JSON_FLAG = "--json";
    public static final String JSON_DOC =
            "Also write the summary as JSON to this file; its directory must exist. Checked before anything starts.";

    public static final String HTML_FLAG = "--html";
    public static final String HTML_DOC = "Where to write the HTML report; its directory must exist. Checked before"
            + " anything starts. Default: target/demo-inventory-report.html in the demo-inventory directory.";
    /**
     * The system property with the demo-inventory directory, set by the launcher and by {@code exec:exec};
     * the default HTML report goes to its {@code target} directory (else to {@code target} in the working
     * directory).
     */
    public static final String HOME_PROPERTY = "demo.home";

    public static final String MIN_LANDED_PAUSES_FLAG = "--min-landed-pauses";
    public static final String MIN_LANDED_PAUSES_DOC = "The fewest pauses that must land in each run (another"
            + " worker took the SKU over while the paused one was frozen), 1 to 1000; fewer and the run proves"
            + " nothing, so the demo exits 1. Default: ${DEFAULT-VALUE}.";
    public static final int DEFAULT_MIN_LANDED_PAUSES = 1;

    public static final String KEEP_FLAG = "--keep";
    public static final String KEEP_DOC = "Leave the topics, lock nodes and consumer watermarks each run creates"
            + " (they are removed by default; embedded servers are removed whole).";

    /** The durations users type, with examples at the demo's scale in its messages. */
    static final Durations DURATIONS = new Durations(
            "a duration here is zero or more, for example 500ms or 2s", "500ms, 2s, 1.5s, 2m, 1h or PT2S");

    /** The most the embedded ZooKeeper grants: 20 x its 500 ms tickTime. */
    static final Duration EMBEDDED_MAX_SESSION_TIMEOUT = Duration.ofSeconds(10);

    public DemoSettings {
        jdbcUser = jdbcUser == null ? DEFAULT_JDBC_USER : jdbcUser;
        jdbcPassword = jdbcPassword == null ? "" : jdbcPassword;
        zookeeperConnect = blankToNull(ZOOKEEPER_FLAG, zookeeperConnect);
        jdbcUrl = blankToNull(JDBC_URL_FLAG, jdbcUrl);
        kafkaBootstrap = blankToNull(KAFKA_FLAG, kafkaBootstrap);
        if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException(
                    JDBC_URL_FLAG + " must be a jdbc:postgresql: URL, got '" + jdbcUrl + "'");
        }
        requireRange(WORKERS_FLAG, workers, 1, 32);
        requireRange(SKUS_FLAG, skus, 1, 1_000);
        requireRange(INITIAL_STOCK_FLAG, initialStock, 1, 1_000_000);
        requireRange(DURATION_FLAG, duration, Duration.ofSeconds(3), Duration.ofHours(1));
        requireRange(SESSION_TIMEOUT_FLAG, sessionTimeout, Duration.ofSeconds(1), Duration.ofSeconds(60));
        if (zookeeperConnect == null && sessionTimeout.compareTo(EMBEDDED_MAX_SESSION_TIMEOUT) > 0) {
            throw new IllegalArgumentException(SESSION_TIMEOUT_FLAG + " " + Durations.format(sessionTimeout)
                    + " is more than the embedded ZooKeeper grants: at most 20 x its 500ms tickTime = "
                    + Durations.format(EMBEDDED_MAX_SESSION_TIMEOUT) + "; use " + ZOOKEEPER_FLAG
                    + " with a server whose maxSessionTimeout allows more");
        }
        requireRange(PAUSE_FLAG, pause, Duration.ofMillis(100), Duration.ofMinutes(5));
        requireRange(PAUSE_EVERY_FLAG, pauseEvery, Duration.ofMillis(100), Duration.ofHours(1));
        requireRange(WORK_FLAG, work, Duration.ZERO, Duration.ofSeconds(10));
        requireRange(MIN_LANDED_PAUSES_FLAG, minLandedPauses, 1, 1_000);
        if (pause.compareTo(sessionTimeout) <= 0) {
            throw new IllegalArgumentException(PAUSE_FLAG + " " + Durations.format(pause)
                    + " is not longer than " + SESSION_TIMEOUT_FLAG + " " + Durations.format(sessionTimeout)
                    + ": the paused worker's ZooKeeper session would survive the pause and it would keep its lock,"
                    + " so there would be nothing to fence. Use for example " + PAUSE_FLAG + " "
                    + Durations.format(sessionTimeout.plus(sessionTimeout.dividedBy(2))));
        }
        Objects.requireNonNull(modes, "modes");
        if (modes.isEmpty()) {
            throw new IllegalArgumentException(MODE_FLAG + " names no run");
        }
        modes = List.copyOf(modes);
    }

    /** Every default, with embedded servers and no JSON file. */
    public static DemoSettings defaults() {
        return new DemoSettings(
                null,
                null,
                DEFAULT_JDBC_USER,
                "",
                null,
                DEFAULT_WORKERS,
                DEFAULT_SKUS,
                DEFAULT_INITIAL_STOCK,
                DURATIONS.parse(DEFAULT_DURATION),
                DURATIONS.parse(DEFAULT_PAUSE),
                DURATIONS.parse(DEFAULT_PAUSE_EVERY),
                DURATIONS.parse(DEFAULT_SESSION_TIMEOUT),
                DURATIONS.parse(DEFAULT_WORK),
                DEFAULT_SEED,
                parseModes(DEFAULT_MODE),
                null,
                defaultHtml(),
                DEFAULT_MIN_LANDED_PAUSES,
                false);
    }

    /** {@code target/demo-inventory-report.html} under {@value #HOME_PROPERTY}, or under the working directory. */
    public static Path defaultHtml() {
        String home = System.getProperty(HOME_PROPERTY);
        Path target = home == null || home.isBlank() ? Path.of("target") : Path.of(home, "target");
        return target.resolve("demo-inventory-report.html");
    }

    /**
     * {@code unfenced}, {@code lease-check}, {@code fenced}, {@code both} (unfenced, then fenced) or {@code
     * all} (unfenced, lease-check, fenced).
     *
     * @throws IllegalArgumentException naming the value otherwise
     */
    public static List<Mode> parseModes(String value) {
        String text = value == null ? "" : value.trim();
        return switch (text) {
            case "unfenced" -> List.of(Mode.UNFENCED);
            case "lease-check" -> List.of(Mode.LEASE_CHECK);
            case "fenced" -> List.of(Mode.FENCED);
            case "both" -> List.of(Mode.UNFENCED, Mode.FENCED);
            case "all" -> List.of(Mode.UNFENCED, Mode.LEASE_CHECK, Mode.FENCED);
            default ->
                throw new IllegalArgumentException(
                        MODE_FLAG + " must be unfenced, lease-check, fenced, both or all, got '" + value + "'");
        };
    }

    /** Whether all three servers are embedded ones this process starts. */
    public boolean allEmbedded() {
        return zookeeperConnect == null && jdbcUrl == null && kafkaBootstrap == null;
    }

    public DemoSettings withDuration(Duration newDuration) {
        return new DemoSettings(
                zookeeperConnect,
                jdbcUrl,
                jdbcUser,
                jdbcPassword,
                kafkaBootstrap,
                workers,
                skus,
                initialStock,
                newDuration,
                pause,
                pauseEvery,
                sessionTimeout,
                work,
                seed,
                modes,
                jsonFile,
                htmlFile,
                minLandedPauses,
                keep);
    }

    public DemoSettings withPauses(Duration newPauseEvery, int newMinLandedPauses) {
        return new DemoSettings(
                zookeeperConnect,
                jdbcUrl,
                jdbcUser,
                jdbcPassword,
                kafkaBootstrap,
                workers,
                skus,
                initialStock,
                duration,
                pause,
                newPauseEvery,
                sessionTimeout,
                work,
                seed,
                modes,
                jsonFile,
                htmlFile,
                newMinLandedPauses,
                keep);
    }

    public DemoSettings withWorkload(int newWorkers, int newSkus, int newInitialStock) {
        return new DemoSettings(
                zookeeperConnect,
                jdbcUrl,
                jdbcUser,
                jdbcPassword,
                kafkaBootstrap,
                newWorkers,
                newSkus,
                newInitialStock,
                duration,
                pause,
                pauseEvery,
                sessionTimeout,
                work,
                seed,
                modes,
                jsonFile,
                htmlFile,
                minLandedPauses,
                keep);
    }

    @Override
    public String toString() {
        // never print the password
        return "workers " + workers + ", SKUs " + skus + ", initial stock " + initialStock + ", duration "
                + Durations.format(duration) + ", pause " + Durations.format(pause) + " every "
                + Durations.format(pauseEvery) + ", session timeout " + Durations.format(sessionTimeout)
                + ", work " + Durations.format(work) + ", seed " + seed + ", at least " + minLandedPauses
                + " landed pause(s) per run";
    }

    private static String blankToNull(String flag, String value) {
        if (value == null) {
            return null;
        }
        if (value.isBlank()) {
            throw new IllegalArgumentException(flag + " must not be blank");
        }
        return value.trim();
    }

    private static void requireRange(String flag, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(flag + " must be between " + min + " and " + max + ", got " + value);
        }
    }

    private static void requireRange(String flag, Duration value, Duration min, Duration max) {
        Objects.requireNonNull(value, flag);
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new IllegalArgumentException(flag + " must be between " + Durations.format(min) + " and "
                    + Durations.format(max) + ", got " + Durations.format(value));
        }
    }
}
