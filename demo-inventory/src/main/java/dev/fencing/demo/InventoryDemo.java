package dev.fencing.demo;

import dev.fencing.harness.Cli;
import dev.fencing.harness.Durations;
import dev.fencing.harness.HarnessException;
import dev.fencing.harness.Preflight;
import dev.fencing.harness.WholeNumbers;
import dev.fencing.harness.ZooKeeperAccess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

    private static final Duration WARM_UP = Duration.ofSeconds(5);

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
        WorkerFleet.onInterrupt(() -> System.err.println(
                "demo-inventory: interrupted; the workers were thawed and stopped and the embedded servers shut down"));
        int code = execute(System.out, System.err, args);
        WorkerFleet.finished();
        WorkerFleet.cleanUp();
        System.exit(code);
    }

    /** Parses, validates and runs; returns the exit code. Messages go to {@code out} and {@code err}. */
    static int execute(PrintStream out, PrintStream err, String... args) {
        InventoryDemo demo = new InventoryDemo();
        demo.progress = out;
        CommandLine commandLine =
                Cli.handled(commandLine(demo), "demo-inventory", out, err, e -> e instanceof DemoUsageException);
        return commandLine.execute(args);
    }

    /** A command line with converters whose messages speak plainly (picocli's say "is not a long"). */
    private static CommandLine commandLine(InventoryDemo demo) {
        CommandLine commandLine = new CommandLine(demo);
        WholeNumbers.register(commandLine, 4);
        commandLine.registerConverter(Duration.class, DemoSettings.DURATIONS);
        return commandLine;
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
    public Integer call() {
        DemoSettings settings = settings();
        try {
            Preflight.checkPlatform("demo-inventory", System.getProperty("os.name"));
            Preflight.checkOutput(DemoSettings.HTML_FLAG, settings.htmlFile());
            if (settings.jsonFile() != null) {
                Preflight.checkOutput(DemoSettings.JSON_FLAG, settings.jsonFile());
            }
        } catch (IllegalArgumentException e) {
            throw new DemoUsageException(e.getMessage());
        }
        progress.println("demo-inventory: " + settings);
        List<RunResult> runs = new ArrayList<>();
        Path logDirectory;
        try {
            logDirectory = Files.createTempDirectory("demo-inventory-logs-");
        } catch (IOException e) {
            throw new DemoException("cannot create a directory for worker logs: " + e.getMessage(), e);
        }
        if (settings.zookeeperConnect() != null) {
            // An external ZooKeeper may grant another session timeout than asked: find out before any
            // embedded server starts, so that a --pause it makes useless ends the demo at once.
            checkGrantedSessionTimeout(settings, settings.zookeeperConnect());
        }
        progress.println(settings.allEmbedded() ? "starting embedded servers" : "connecting to servers");
        Clusters clusters = Clusters.open(settings, progress);
        WorkerFleet.register(clusters);
        try {
            if (settings.zookeeperConnect() == null) {
                checkGrantedSessionTimeout(settings, clusters.zookeeperConnect());
            }
            ScenarioRunner runner = new ScenarioRunner(settings, clusters, logDirectory, progress);
            runner.warmUp(WARM_UP);
            for (Mode run : settings.modes()) {
                runs.add(runner.run(run));
            }
        } finally {
            WorkerFleet.unregister(clusters);
            clusters.close();
        }
        progress.println();
        progress.print(Reports.table(runs));
        writeReports(settings, runs);
        progress.println("worker logs: " + logDirectory);
        Verdict verdict = Verdict.of(runs, settings.minLandedPauses());
        verdict.notes().forEach(progress::println);
        verdict.failures().forEach(progress::println);
        if (verdict.passed()) {
            progress.println("passed: every run had landed pauses"
                    + (settings.modes().contains(Mode.FENCED) ? " and the fenced run kept every invariant" : ""));
        }
        return verdict.passed() ? EXIT_OK : EXIT_FAILURE;
    }

    /** Reads the session timeout ZooKeeper grants and refuses a pause that does not outlast it. */
    private void checkGrantedSessionTimeout(DemoSettings settings, String zookeeperConnect) {
        Duration granted;
        try {
            granted = ZooKeeperAccess.grantedSessionTimeout(zookeeperConnect, settings.sessionTimeout());
        } catch (HarnessException e) {
            throw settings.zookeeperConnect() == null
                    ? e
                    : new DemoException(e.getMessage() + " (" + DemoSettings.ZOOKEEPER_FLAG + ")", e);
        }
        progress.println("ZooKeeper grants a session timeout of " + Durations.format(granted) + " ("
                + Durations.format(settings.sessionTimeout()) + " asked)");
        SessionTimeouts.requirePauseLonger(settings.pause(), settings.sessionTimeout(), granted);
    }

    private void writeReports(DemoSettings settings, List<RunResult> runs) {
        Cli.write(DemoSettings.HTML_FLAG, settings.htmlFile(), Reports.html(runs, settings));
        progress.println("HTML report: " + settings.htmlFile().toAbsolutePath());
        if (settings.jsonFile() != null) {
            Cli.write(DemoSettings.JSON_FLAG, settings.jsonFile(), Reports.json(runs, settings));
            progress.println("JSON summary: " + settings.jsonFile().toAbsolutePath());
        }
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
