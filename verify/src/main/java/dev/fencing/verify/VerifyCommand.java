package dev.fencing.verify;

import dev.fencing.harness.Cli;
import dev.fencing.harness.Coordinator;
import dev.fencing.testsupport.RedisServers;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code verify} command: the whole chain (lock, PostgreSQL write, Kafka record, consumer) under real faults,
 * fenced and then unfenced with the same seed and fault schedule, each run's histories checked by the
 * independent checker.
 *
 * <pre>
 * verify/run                                  # both runs, 60 s of workload each, embedded servers
 * verify/run --duration 10m --json /tmp/verify.json
 * verify/run --mode fenced --faults pause,partition
 * verify/run --resource redis                 # the writers write Redis through fencing-redis instead
 * verify/run --resource election              # leaders of elections write many times per term instead
 * verify/run --resource rwlock                # readers and writers under read/write locks instead
 * verify/run --locks etcd                     # the writers take their locks on etcd instead
 * </pre>
 *
 * <p>Exit codes: {@value #EXIT_OK} when the fenced run (if any) has no violation and the control run (if any) has
 * at least one; {@value #EXIT_FAILURE} otherwise, or when a run could not complete; {@value #EXIT_USAGE} for bad
 * flags, with one sentence naming the flag, printed last.
 */
@Command(
        name = "verify",
        mixinStandardHelpOptions = true,
        version = "verify 0.1.0",
        sortOptions = false,
        description = {
            "Attacks lock -> PostgreSQL write -> Kafka record -> consumer with real faults (SIGSTOP pauses, partitions"
                    + " from ZooKeeper, leader kills, backend kills, consumer crashes and rebalances), once fenced and"
                    + " once without fencing, and checks each run's histories with an independent checker. With"
                    + " --resource redis the writers write Redis through fencing-redis instead (pauses, partitions,"
                    + " leader kills); with --resource election they take part in leader elections and write"
                    + " PostgreSQL many times per term (pauses, partitions, leader kills, session expiries); with"
                    + " --resource rwlock they read PostgreSQL rows under read locks, checking each read against its"
                    + " read token, and write them under write locks (pauses of readers and writers, partitions,"
                    + " leader kills). With"
                    + " --locks etcd the writers take their locks on an embedded etcd cluster instead of ZooKeeper.",
            "Servers are embedded unless given by flags. Linux (partitions need root and iproute2) or macOS.",
            "Exit codes: 0 the fenced run had no violation and the control run had some; 1 otherwise, or a run"
                    + " failed; 2 bad flags."
        })
public final class VerifyCommand implements Callable<Integer> {
    /** Environment variable with the JDBC password, for the coordinator and passed on to the clients. */
    public static final String JDBC_PASSWORD_ENV = "VERIFY_JDBC_PASSWORD";

    public static final int EXIT_OK = Cli.EXIT_OK;
    public static final int EXIT_FAILURE = Cli.EXIT_FAILURE;
    public static final int EXIT_USAGE = Cli.EXIT_USAGE;

    @Spec
    private CommandSpec spec;

    @Option(names = VerifySettings.ZOOKEEPER_FLAG, paramLabel = "CONNECT", description = VerifySettings.ZOOKEEPER_DOC)
    private String zookeeper;

    @Option(names = VerifySettings.JDBC_URL_FLAG, paramLabel = "URL", description = VerifySettings.JDBC_URL_DOC)
    private String jdbcUrl;

    @Option(
            names = VerifySettings.JDBC_USER_FLAG,
            paramLabel = "USER",
            defaultValue = VerifySettings.DEFAULT_JDBC_USER,
            description = VerifySettings.JDBC_USER_DOC)
    private String jdbcUser;

    @Option(
            names = VerifySettings.JDBC_PASSWORD_FLAG,
            paramLabel = "PASSWORD",
            description = VerifySettings.JDBC_PASSWORD_DOC)
    private String jdbcPassword;

    @Option(names = VerifySettings.KAFKA_FLAG, paramLabel = "BOOTSTRAP", description = VerifySettings.KAFKA_DOC)
    private String kafka;

    @Option(names = VerifySettings.REDIS_FLAG, paramLabel = "URI", description = VerifySettings.REDIS_DOC)
    private String redis;

    @Option(
            names = VerifySettings.RESOURCE_FLAG,
            paramLabel = "RESOURCE",
            defaultValue = VerifySettings.DEFAULT_RESOURCE,
            description = VerifySettings.RESOURCE_DOC)
    private String resource;

    @Option(
            names = VerifySettings.LOCKS_FLAG,
            paramLabel = "SERVICE",
            defaultValue = VerifySettings.DEFAULT_LOCKS,
            description = VerifySettings.LOCKS_DOC)
    private String locks;

    @Option(
            names = VerifySettings.CONSUMER_CONCURRENCY_FLAG,
            paramLabel = "N",
            defaultValue = "" + VerifySettings.DEFAULT_CONSUMER_CONCURRENCY,
            description = VerifySettings.CONSUMER_CONCURRENCY_DOC)
    private int consumerConcurrency;

    @Option(
            names = VerifySettings.CLIENTS_FLAG,
            paramLabel = "N",
            defaultValue = "" + VerifySettings.DEFAULT_CLIENTS,
            description = VerifySettings.CLIENTS_DOC)
    private int clients;

    @Option(
            names = VerifySettings.RESOURCES_FLAG,
            paramLabel = "N",
            defaultValue = "" + VerifySettings.DEFAULT_RESOURCES,
            description = VerifySettings.RESOURCES_DOC)
    private int resources;

    @Option(
            names = VerifySettings.DURATION_FLAG,
            paramLabel = "TIME",
            defaultValue = VerifySettings.DEFAULT_DURATION,
            description = VerifySettings.DURATION_DOC)
    private Duration duration;

    @Option(
            names = VerifySettings.SEED_FLAG,
            paramLabel = "N",
            defaultValue = "" + VerifySettings.DEFAULT_SEED,
            description = VerifySettings.SEED_DOC)
    private long seed;

    @Option(
            names = VerifySettings.FAULTS_FLAG,
            paramLabel = "LIST",
            defaultValue = VerifySettings.DEFAULT_FAULTS,
            description = VerifySettings.FAULTS_DOC)
    private String faults;

    @Option(
            names = VerifySettings.MODE_FLAG,
            paramLabel = "MODE",
            defaultValue = VerifySettings.DEFAULT_MODE,
            description = VerifySettings.MODE_DOC)
    private String mode;

    @Option(
            names = VerifySettings.SESSION_TIMEOUT_FLAG,
            paramLabel = "TIME",
            defaultValue = VerifySettings.DEFAULT_SESSION_TIMEOUT,
            description = VerifySettings.SESSION_TIMEOUT_DOC)
    private Duration sessionTimeout;

    @Option(names = VerifySettings.JSON_FLAG, paramLabel = "FILE", description = VerifySettings.JSON_DOC)
    private Path json;

    @Option(names = VerifySettings.HTML_FLAG, paramLabel = "FILE", description = VerifySettings.HTML_DOC)
    private Path html;

    @Option(names = VerifySettings.OUT_FLAG, paramLabel = "DIR", description = VerifySettings.OUT_DOC)
    private Path out;

    @Option(names = VerifySettings.KEEP_FLAG, description = VerifySettings.KEEP_DOC)
    private boolean keep;

    private PrintStream progress = System.out;

    public static void main(String[] args) {
        Coordinator.exit(
                "verify",
                "the clients and the embedded servers were stopped",
                () -> execute(System.out, System.err, args));
    }

    /** Parses, validates and runs; returns the exit code. */
    static int execute(PrintStream out, PrintStream err, String... args) {
        VerifyCommand command = new VerifyCommand();
        command.progress = out;
        CommandLine commandLine = Cli.handled(commandLine(command), "verify", out, err);
        return commandLine.execute(args);
    }

    /** Parses and validates flags without running anything. */
    static VerifySettings parse(String... args) {
        VerifyCommand command = new VerifyCommand();
        commandLine(command).parseArgs(args);
        return command.settings();
    }

    private static CommandLine commandLine(VerifyCommand command) {
        return Cli.commandLine(command, 6, VerifySettings.DURATIONS);
    }

    @Override
    public Integer call() throws InterruptedException {
        VerifySettings settings = settings();
        if (html == null) {
            createDefaultDirectory(settings.htmlFile());
        }
        return Coordinator.run(new VerifyExperiment(settings, Servers.newRunId()), progress);
    }

    private VerifySettings settings() {
        String password = jdbcPassword != null ? jdbcPassword : System.getenv(JDBC_PASSWORD_ENV);
        try {
            return new VerifySettings(
                    zookeeper,
                    jdbcUrl,
                    jdbcUser,
                    password,
                    kafka,
                    redis != null ? redis : System.getenv(RedisServers.URL_ENV),
                    Resource.parse(resource),
                    clients,
                    resources,
                    duration,
                    seed,
                    parseFaults(faults),
                    VerifySettings.parseModes(mode),
                    sessionTimeout,
                    json,
                    html != null ? html : VerifySettings.defaultUnderTarget("verify-report.html"),
                    out != null ? out : VerifySettings.defaultUnderTarget("verify-runs"),
                    keep,
                    LockService.parse(locks),
                    consumerConcurrency);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec == null ? commandLine(this) : spec.commandLine(), e.getMessage(), e);
        }
    }

    private static Set<FaultKind> parseFaults(String list) {
        try {
            return FaultKind.parseList(list);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(VerifySettings.FAULTS_FLAG + ": " + e.getMessage(), e);
        }
    }

    /** The default report goes under target/, which a fresh clone does not have yet. */
    private static void createDefaultDirectory(Path file) {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            try {
                Files.createDirectories(parent);
            } catch (IOException e) {
                // Preflight names the directory that is missing
            }
        }
    }
}
