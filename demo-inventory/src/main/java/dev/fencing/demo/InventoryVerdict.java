package dev.fencing.demo;

import dev.fencing.harness.Verdict;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * The demo's exit decision, as a pure function of the runs: a run proves something only if enough of its
 * pauses landed (another worker took the SKU over while the paused one was frozen), and the fenced run
 * must keep every invariant and cross-check. Stateless and thread-safe.
 *
 * <pre>{@code
 * Verdict verdict = InventoryVerdict.of(runs, settings.minLandedPauses());
 * if (!verdict.passed()) verdict.failures().forEach(System.out::println);
 * }</pre>
 */
final class InventoryVerdict {
    private InventoryVerdict() {}

    /**
     * The failures (each a reason to exit with {@link InventoryDemo#EXIT_FAILURE}), the notes worth printing that do
     * not fail the runs, and what passing runs showed.
     */
    static Verdict of(List<RunResult> runs, int minLandedPauses) {
        List<String> failures = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (RunResult run : runs) {
            String label = run.mode().label();
            if (run.pausesLanded() < minLandedPauses) {
                failures.add(String.format(
                        Locale.ROOT,
                        "The %s run proves nothing: %d of its %d pauses landed (a newer token wrote the SKU while"
                                + " the paused worker was frozen), fewer than %s %d; give it a longer %s, fewer"
                                + " %s or more frequent pauses (%s).",
                        label,
                        run.pausesLanded(),
                        run.pausesInjected(),
                        DemoSettings.MIN_LANDED_PAUSES_FLAG,
                        minLandedPauses,
                        DemoSettings.DURATION_FLAG,
                        DemoSettings.SKUS_FLAG,
                        DemoSettings.PAUSE_EVERY_FLAG));
            }
            // Enough landed pauses, but all at one point: the run passed without trying the other fence.
            if (run.pausesLanded() > 0 && !landed(run, point -> point != WorkerEvent.PausePoint.WRITE_PUBLISH)) {
                notes.add(untested(run, "between a read and its write", "no late write"));
            }
            if (run.pausesLanded() > 0 && !landed(run, point -> point == WorkerEvent.PausePoint.WRITE_PUBLISH)) {
                notes.add(untested(run, "between a write and its publish", "no late record"));
            }
            if (run.mode() == Mode.FENCED && !run.report().invariantsHold()) {
                failures.add("The fenced run broke an invariant or a cross-check (listed above): that is a bug in"
                        + " the fencing toolkit or in the demo.");
            }
            if (run.mode() != Mode.FENCED
                    && run.pausesLanded() > 0
                    && !run.report().anomalyDetected()) {
                notes.add("note: the " + label + " run shows no stale write, lost update or oversold unit this time;"
                        + " give it more pauses (" + DemoSettings.PAUSE_EVERY_FLAG + "), fewer SKUs or a longer "
                        + DemoSettings.DURATION_FLAG + ".");
            }
        }
        boolean fenced = runs.stream().anyMatch(run -> run.mode() == Mode.FENCED);
        return new Verdict(
                failures,
                notes,
                "every run had landed pauses" + (fenced ? " and the fenced run kept every invariant" : ""));
    }

    private static boolean landed(RunResult run, Predicate<WorkerEvent.PausePoint> where) {
        return run.pauses().stream().anyMatch(p -> p.landed() && where.test(p.point()));
    }

    private static String untested(RunResult run, String where, String what) {
        return "note: no pause of the " + run.mode().label() + " run landed " + where + ", so it tested " + what
                + "; give it a longer " + DemoSettings.DURATION_FLAG + " or more frequent pauses ("
                + DemoSettings.PAUSE_EVERY_FLAG + ").";
    }
}
