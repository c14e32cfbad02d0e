package dev.fencing.demo;

import dev.fencing.harness.Durations;
import dev.fencing.harness.Experiment;
import dev.fencing.harness.HarnessException;
import dev.fencing.harness.Verdict;
import dev.fencing.harness.ZooKeeperAccess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The demo as the harness's {@link Experiment}: its servers ({@link Clusters}), a warm-up before the first mode,
 * each mode run by a {@link ScenarioRunner}, its reports ({@link Reports}) and its verdict ({@link
 * InventoryVerdict}). Before any server starts it checks that ZooKeeper grants a session the pauses outlast. Not
 * thread-safe: one demo at a time.
 *
 * <pre>{@code
 * int code = Coordinator.run(new InventoryExperiment(settings), System.out);
 * }</pre>
 */
final class InventoryExperiment implements Experiment<Clusters, Mode, RunResult> {
    private static final Duration WARM_UP = Duration.ofSeconds(5);

    private final DemoSettings settings;
    private Path logDirectory;

    InventoryExperiment(DemoSettings settings) {
        this.settings = settings;
    }

    @Override
    public Plan<Mode> plan() {
        return new Plan<>(
                "demo-inventory",
                settings.toString(),
                settings.modes(),
                new Outputs(
                        DemoSettings.HTML_FLAG,
                        settings.htmlFile(),
                        "HTML report",
                        DemoSettings.JSON_FLAG,
                        settings.jsonFile()));
    }

    @Override
    public Clusters open(PrintStream progress) {
        try {
            logDirectory = Files.createTempDirectory("demo-inventory-logs-");
        } catch (IOException e) {
            throw new DemoException("cannot create a directory for worker logs: " + e.getMessage(), e);
        }
        if (settings.zookeeperConnect() != null) {
            // An external ZooKeeper may grant another session timeout than asked: find out before any
            // embedded server starts, so that a --pause it makes useless ends the demo at once.
            checkGrantedSessionTimeout(settings.zookeeperConnect(), progress);
        }
        progress.println(settings.allEmbedded() ? "starting embedded servers" : "connecting to servers");
        return Clusters.open(settings, progress);
    }

    @Override
    public Runner<Mode, RunResult> prepare(Clusters clusters, PrintStream progress) {
        if (settings.zookeeperConnect() == null) {
            checkGrantedSessionTimeout(clusters.zookeeperConnect(), progress);
        }
        ScenarioRunner runner = new ScenarioRunner(settings, clusters, logDirectory, progress);
        runner.warmUp(WARM_UP);
        return runner::run;
    }

    @Override
    public String table(List<RunResult> runs) {
        return Reports.table(runs);
    }

    @Override
    public String html(List<RunResult> runs) {
        return Reports.html(runs, settings);
    }

    @Override
    public String json(List<RunResult> runs) {
        return Reports.json(runs, settings);
    }

    /** The demo's verdict, after a line that says where the worker logs are. */
    @Override
    public Verdict verdict(List<RunResult> runs) {
        Verdict verdict = InventoryVerdict.of(runs, settings.minLandedPauses());
        List<String> notes = new ArrayList<>();
        notes.add("worker logs: " + logDirectory);
        notes.addAll(verdict.notes());
        return new Verdict(verdict.failures(), notes, verdict.passedLine());
    }

    /** Reads the session timeout ZooKeeper grants and refuses a pause that does not outlast it. */
    private void checkGrantedSessionTimeout(String zookeeperConnect, PrintStream progress) {
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
}
