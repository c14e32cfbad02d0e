package dev.fencing.demo;

import dev.fencing.harness.Cli;
import dev.fencing.harness.Coordinator;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The demo's command line: the same inventory workload, without and then with fencing, while worker JVMs
 * are frozen with SIGSTOP in the middle of their writes; then a side-by-side table, an HTML report and
 * optionally a JSON summary.
 *
 * <pre>
 * demo-inventory/run
 * demo-inventory/run --mode all --json /tmp/demo.json
 * </pre>
 *
 * <p>Exit codes: {@value #EXIT_OK} when the runs completed, each run had at least {@code --min-landed-pauses}
 * landed pauses and the fenced run (if any) kept every invariant and cross-check; {@value #EXIT_FAILURE} when
 * a run could not complete (unreachable server, failed worker), proved nothing (too few landed pauses) or the
 * fenced run broke an invariant; {@value #EXIT_USAGE} for bad flags or settings the servers cannot honour,
 * with one sentence naming the flag and the reason, printed last.
 */
@Command(
        name = "demo-inventory",
        mixinStandardHelpOptions = true,
        version = "demo-inventory 0.1.0",
        sortOptions = false,
        description = {
            "Runs an inventory workload on ZooKeeper locks, PostgreSQL and Kafka with the same seed without"
                    + " fencing, then with it (and with --mode all also with a lease check before each write),"
                    + " freezing lock holders with SIGSTOP mid-write for longer than their ZooKeeper session timeout.",
            "Servers are embedded unless given by flags. Linux and macOS only (kill -STOP, sh).",
            "Exit codes: 0 passed; 1 a run failed, proved nothing (too few landed pauses) or the fenced run broke"
                    + " an invariant; 2 bad flags."
        })
public final class InventoryDemo implements Callable<Integer> {
    /** Environment variable with the JDBC password, for the coordinator and passed on to workers. */
    public static final String JDBC_PASSWORD_ENV = "DEMO_JDBC_PASSWORD";

    public static final int EXIT_OK = Cli.EXIT_OK;
    public static final int EXIT_FAILURE = Cli.EXIT_FAILURE;
    public static final int EXIT_USAGE = Cli.EXIT_USAGE;

    @Spec
    private CommandSpec spec;

    @Option(names = DemoSettings.ZOOKEEPER_FLAG, paramLabel = "CONNECT", description = DemoSettings.ZOOKEEPER_DOC)
    private String zookeeper;

    @Option(names = DemoSettings.JDBC_URL_FLAG, paramLabel = "URL", description = DemoSettings.JDBC_URL_DOC)
    private String jdbcUrl;

    @Option(
            names = DemoSettings.JDBC_USER_FLAG,
            paramLabel = "USER",
            defaultValue = DemoSettings.DEFAULT_JDBC_USER,
            description = DemoSettings.JDBC_USER_DOC)
    private String jdbcUser;

    @Option(
            names = DemoSettings.JDBC_PASSWORD_FLAG,
            paramLabel = "PASSWORD",
            description = DemoSettings.JDBC_PASSWORD_DOC)
    private String jdbcPassword;

    @Option(names = DemoSettings.KAFKA_FLAG, paramLabel = "BOOTSTRAP", description = DemoSettings.KAFKA_DOC)
    private String kafka;

    @Option(
            names = DemoSettings.WORKERS_FLAG,
            paramLabel = "N",
            defaultValue = "" + DemoSettings.DEFAULT_WORKERS,
            description = DemoSettings.WORKERS_DOC)
    private int workers;

    @Option(
            names = DemoSettings.SKUS_FLAG,
            paramLabel = "N",
            defaultValue = "" + DemoSettings.DEFAULT_SKUS,
            description = DemoSettings.SKUS_DOC)
    private int skus;

    @Option(
            names = DemoSettings.INITIAL_STOCK_FLAG,
            paramLabel = "UNITS",
            defaultValue = "" + DemoSettings.DEFAULT_INITIAL_STOCK,
            description = DemoSettings.INITIAL_STOCK_DOC)
    private int initialStock;

    @Option(
            names = DemoSettings.DURATION_FLAG,
            paramLabel = "TIME",
            defaultValue = DemoSettings.DEFAULT_DURATION,
            description = DemoSettings.DURATION_DOC)
    private Duration duration;

    @Option(
            names = DemoSettings.PAUSE_FLAG,
            paramLabel = "TIME",
            defaultValue = DemoSettings.DEFAULT_PAUSE,
            description = DemoSettings.PAUSE_DOC)
    private Duration pause;

    @Option(
            names = DemoSettings.PAUSE_EVERY_FLAG,
            paramLabel = "TIME",
            defaultValue = DemoSettings.DEFAULT_PAUSE_EVERY,
            description = DemoSettings.PAUSE_EVERY_DOC)
    private Duration pauseEvery;

    @Option(
            names = DemoSettings.SESSION_TIMEOUT_FLAG,
            paramLabel = "TIME",
            defaultValue = DemoSettings.DEFAULT_SESSION_TIMEOUT,
            description = DemoSettings.SESSION_TIMEOUT_DOC)
    private Duration sessionTimeout;

    @Option(
            names = DemoSettings.WORK_FLAG,
            paramLabel = "TIME",
            defaultValue = DemoSettings.DEFAULT_WORK,
            description = DemoSettings.WORK_DOC)
    private Duration work;

    @Option(
            names = DemoSettings.SEED_FLAG,
            paramLabel = "N",
            defaultValue = "" + DemoSettings.DEFAULT_SEED,
            description = DemoSettings.SEED_DOC)
    private long seed;

    @Option(
            names = DemoSettings.MODE_FLAG,
            paramLabel = "MODE",
            defaultValue = DemoSettings.DEFAULT_MODE,
            description = DemoSettings.MODE_DOC)
    private String mode;

    @Option(names = DemoSettings.JSON_FLAG, paramLabel = "FILE", description = DemoSettings.JSON_DOC)
    private Path json;

    @Option(names = DemoSettings.HTML_FLAG, paramLabel = "FILE", description = DemoSettings.HTML_DOC)
    private Path html;

    @Option(
            names = DemoSettings.MIN_LANDED_PAUSES_FLAG,
            paramLabel = "N",
            defaultValue = "" + DemoSettings.DEFAULT_MIN_LANDED_PAUSES,
            description = DemoSettings.MIN_LANDED_PAUSES_DOC)
    private int minLandedPauses;

    @Option(names = DemoSettings.KEEP_FLAG, description = DemoSettings.KEEP_DOC)
    private boolean keep;

    private PrintStream progress = System.out;

    public static void main(String[] args) {
        Coordinator.exit(
                "demo-inventory",
                "the workers were thawed and stopped and the embedded servers shut down",
                () -> execute(System.out, System.err, args));
    }

    /** Parses, validates and runs; returns the exit code. Messages go to {@code out} and {@code err}. */
    static int execute(PrintStream out, PrintStream err, String... args) {
        InventoryDemo demo = new InventoryDemo();
        demo.progress = out;
        CommandLine commandLine = Cli.handled(commandLine(demo), "demo-inventory", out, err);
        return commandLine.execute(args);
    }

    private static CommandLine commandLine(InventoryDemo demo) {
        return Cli.commandLine(demo, 4, DemoSettings.DURATIONS);
    }

    /**
     * Parses and validates flags without running anything.
     *
     * @throws ParameterException with a message naming the bad flag and value
     */
    static DemoSettings parse(String... args) {
        InventoryDemo demo = new InventoryDemo();
        CommandLine commandLine = commandLine(demo);
        commandLine.parseArgs(args);
        return demo.settings();
    }

    @Override
    public Integer call() throws InterruptedException {
        return Coordinator.run(new InventoryExperiment(settings()), progress);
    }

    private DemoSettings settings() {
        String password = jdbcPassword != null ? jdbcPassword : System.getenv(JDBC_PASSWORD_ENV);
        try {
            return new DemoSettings(
                    zookeeper,
                    jdbcUrl,
                    jdbcUser,
                    password,
                    kafka,
                    workers,
                    skus,
                    initialStock,
                    duration,
                    pause,
                    pauseEvery,
                    sessionTimeout,
                    work,
                    seed,
                    DemoSettings.parseModes(mode),
                    json,
                    html != null ? html : DemoSettings.defaultHtml(),
                    minLandedPauses,
                    keep);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec == null ? commandLine(this) : spec.commandLine(), e.getMessage(), e);
        }
    }
}
