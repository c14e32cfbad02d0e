package dev.fencing.verify;

import dev.fencing.harness.Coordinator;
import dev.fencing.harness.Durations;
import dev.fencing.harness.Experiment;
import dev.fencing.harness.Verdict;
import dev.fencing.verify.checker.ViolationKind;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * verify as the harness's {@link Experiment}: its servers ({@link Servers}, under one run id), the faults these
 * servers and this resource allow, each mode run by a {@link ModeRunner}, its reports ({@link SummaryTable}, {@link
 * HtmlTimeline}, {@link JsonSummary}) and its verdict: the fenced run has no violation, the control run has some.
 * Not thread-safe: one run at a time.
 *
 * <pre>{@code
 * List<RunResult> runs = VerifyExperiment.runAll(settings, System.out);
 * List<String> failures = VerifyExperiment.failures(runs);
 * }</pre>
 */
final class VerifyExperiment implements Experiment<Servers, Mode, RunResult> {
    private final VerifySettings settings;
    private final String runId;

    VerifyExperiment(VerifySettings settings, String runId) {
        this.settings = settings;
        this.runId = runId;
    }

    /** Starts or reaches the servers, runs every mode of {@code settings} on them, and stops them. */
    static List<RunResult> runAll(VerifySettings settings, PrintStream progress) throws InterruptedException {
        return Coordinator.runModes(new VerifyExperiment(settings, Servers.newRunId()), progress);
    }

    /**
     * Runs every mode of {@code settings} on servers already open (for settings needing the same servers, with at
     * most as many clients), leaving them open: a test that runs several resources starts its servers once.
     */
    static List<RunResult> runOn(VerifySettings settings, Servers servers, String runId, PrintStream progress)
            throws InterruptedException {
        return Coordinator.runModes(new VerifyExperiment(settings, runId), servers, progress);
    }

    @Override
    public Plan<Mode> plan() {
        return new Plan<>(
                "verify",
                settings.toString(),
                settings.modes(),
                new Outputs(
                        VerifySettings.HTML_FLAG,
                        settings.htmlFile(),
                        "HTML timeline",
                        VerifySettings.JSON_FLAG,
                        settings.jsonFile()));
    }

    @Override
    public Servers open(PrintStream progress) {
        progress.println(
                settings.allEmbedded()
                        ? "starting embedded servers (run " + runId + ")"
                        : "connecting to servers (run " + runId + ")");
        return Servers.open(settings, runId, progress);
    }

    /** Keeps the faults these servers and this resource allow, and reads the session the writers are granted. */
    @Override
    public Runner<Mode, RunResult> prepare(Servers servers, PrintStream progress) {
        if (settings.keep()) {
            servers.keepDatabase();
        }
        Set<FaultKind> faults = EnumSet.noneOf(FaultKind.class);
        faults.addAll(settings.faults());
        Set<FaultKind> notForLocks = EnumSet.copyOf(faults);
        notForLocks.removeAll(settings.locks().faults());
        if (!notForLocks.isEmpty()) {
            faults.removeAll(notForLocks);
            progress.println(notForLocks.stream().map(FaultKind::flagName).toList() + " faults skipped: they are "
                    + "ZooKeeper's, and the writers take their locks on "
                    + settings.locks().displayName());
        }
        Set<FaultKind> pointless = EnumSet.copyOf(faults);
        pointless.removeAll(settings.resource().faults());
        if (!pointless.isEmpty()) {
            faults.removeAll(pointless);
            progress.println(pointless.stream().map(FaultKind::flagName).toList() + " faults skipped: the "
                    + settings.resource().flagName() + " resource has nothing for them to attack");
        }
        servers.partitionUnavailable().ifPresent(reason -> {
            faults.remove(FaultKind.PARTITION);
            progress.println("partition faults skipped: " + reason + "; running the other faults");
        });
        servers.leaderKillUnavailable().ifPresent(reason -> {
            faults.remove(FaultKind.LEADER_KILL);
            progress.println("leader-kill faults skipped: " + reason + "; running the other faults");
        });
        Duration granted;
        if (settings.locks() == LockService.ETCD) {
            granted = settings.sessionTimeout(); // whole seconds, at least 2: etcd grants such a TTL as asked
            progress.println("  each grant's etcd lease has a TTL of " + Durations.format(granted));
        } else {
            granted = servers.grantedSessionTimeout(settings.sessionTimeout());
            progress.println("  ZooKeeper grants a session timeout of " + Durations.format(granted) + " ("
                    + Durations.format(settings.sessionTimeout()) + " asked)");
        }
        return new ModeRunner(settings, servers, runId, granted, faults, progress)::run;
    }

    @Override
    public String table(List<RunResult> runs) {
        return SummaryTable.of(runs);
    }

    @Override
    public String html(List<RunResult> runs) {
        return HtmlTimeline.of(runs, settings);
    }

    @Override
    public String json(List<RunResult> runs) {
        return JsonSummary.of(runs);
    }

    @Override
    public Verdict verdict(List<RunResult> runs) {
        return new Verdict(failures(runs), List.of(), passedLine(runs));
    }

    /** Why the runs fail, one sentence each; empty when they pass. */
    static List<String> failures(List<RunResult> runs) {
        List<String> failures = new ArrayList<>();
        for (RunResult run : runs) {
            int violations = run.check().violations().size();
            if (run.mode() == Mode.FENCED && violations > 0) {
                failures.add("FAILED: the fenced run broke " + violations + " times what fencing promises (see the"
                        + " violations above)");
            }
            if (run.mode() == Mode.FENCED && run.check().ok() == 0) {
                // --mode fenced has no control run to show the schedule could catch anything: an empty history
                // (writers that never took a lock, every write failing) must not pass as a clean one
                failures.add("FAILED: the fenced run completed no operation ok ("
                        + run.check().operations() + " operations in its histories), so it proves nothing");
            }
            if (run.mode() == Mode.CONTROL && staleViolations(run) == 0) {
                failures.add(
                        run.resource() == Resource.RWLOCK
                                ? "FAILED: the control run, without checking its reads, returned no stale read: under"
                                        + " this schedule the checker could not have caught a stale read of the"
                                        + " fenced run either, so the fenced run proves nothing"
                                : "FAILED: the control run, without fencing, landed no stale write and applied no"
                                        + " stale record: under this schedule the checker could not have caught a"
                                        + " failure of fencing either, so the fenced run proves nothing");
            }
            for (String note : run.notes()) {
                failures.add("FAILED: the " + run.mode().label() + " run did not go as planned: " + note);
            }
        }
        return failures;
    }

    /** The control run's violations of its resource's {@link Resource#staleKinds()}. */
    static long staleViolations(RunResult run) {
        Set<ViolationKind> kinds = run.resource().staleKinds();
        return run.check().violations().stream()
                .filter(v -> kinds.contains(v.kind()))
                .count();
    }

    static String passedLine(List<RunResult> runs) {
        List<String> parts = new ArrayList<>();
        for (RunResult run : runs) {
            parts.add(
                    run.mode() == Mode.FENCED
                            ? "the fenced run kept every property over "
                                    + run.check().operations() + " operations"
                            : run.resource() == Resource.RWLOCK
                                    ? "the control run returned " + staleViolations(run)
                                            + " stale reads, so the checker can catch one"
                                    : "the control run landed " + staleViolations(run)
                                            + " stale writes or records, so the checker can catch a failure of"
                                            + " fencing");
        }
        return String.join("; ", parts);
    }
}
