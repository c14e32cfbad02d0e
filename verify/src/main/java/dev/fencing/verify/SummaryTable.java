package dev.fencing.verify;

import dev.fencing.harness.RunTable;
import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.Violation;
import dev.fencing.verify.checker.ViolationKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The table printed at the end: one column per run, then each run's violations spelled out (the first {@value
 * #SPELLED_OUT} per run; the HTML report has all). Stateless.
 */
final class SummaryTable {
    static final int SPELLED_OUT = 15;

    private SummaryTable() {}

    static String of(List<RunResult> runs) {
        StringBuilder table = new StringBuilder(table(runs).text(runs));
        for (RunResult run : runs) {
            CheckResult check = run.check();
            if (check.violations().isEmpty()) {
                continue;
            }
            table.append('\n')
                    .append(run.mode().label())
                    .append(": ")
                    .append(check.violations().size())
                    .append(" violations")
                    .append(check.violations().size() > SPELLED_OUT ? ", the first " + SPELLED_OUT : "")
                    .append('\n');
            Map<ViolationKind, Integer> byKind = check.violationsByKind();
            byKind.forEach((kind, count) -> {
                if (count > 0) {
                    table.append("  ")
                            .append(kind.name())
                            .append(" (")
                            .append(kind.description())
                            .append("): ")
                            .append(count)
                            .append('\n');
                }
            });
            for (Violation violation : check.violations()
                    .subList(0, Math.min(SPELLED_OUT, check.violations().size()))) {
                table.append("  - ")
                        .append(violation.kind().name())
                        .append(": ")
                        .append(violation.detail())
                        .append('\n');
            }
        }
        for (RunResult run : runs) {
            for (String note : run.notes()) {
                table.append(run.mode().label()).append(" note: ").append(note).append('\n');
            }
        }
        return table.toString();
    }

    /** The side-by-side table of these runs: which rows it has depends on the runs' resources and violations. */
    static RunTable<RunResult> table(List<RunResult> runs) {
        List<RunTable.Row<RunResult>> rows = new ArrayList<>();
        boolean reads = runs.stream().anyMatch(run -> run.resource() == Resource.RWLOCK);
        rows.add(RunTable.row(
                reads ? "operations (appends, reads invoked)" : "operations (appends invoked)",
                run -> n(run.check().operations())));
        rows.add(RunTable.row(
                reads ? "  ok (acknowledged, returned)" : "  ok (acknowledged)",
                run -> n(run.check().ok())));
        rows.add(RunTable.row(
                reads ? "  failed (refused, discarded)" : "  failed (refused)",
                run -> n(run.check().failed())));
        rows.add(RunTable.row("  indeterminate (info)", run -> n(run.check().indeterminate())));
        rows.add(RunTable.heading("faults injected (counted / tried)"));
        for (FaultKind kind : FaultKind.values()) {
            rows.add(RunTable.row(
                    "  " + kind.jsonName(),
                    run -> n(run.counted().getOrDefault(kind, 0)) + " / "
                            + run.faults().stream()
                                    .filter(f -> f.kind() == kind)
                                    .count()));
        }
        if (runs.stream().anyMatch(run -> run.resource().chain())) {
            rows.add(RunTable.row(
                    "records produced (acknowledged)", run -> n(run.check().recordsProduced())));
            rows.add(RunTable.row("records applied", run -> n(run.check().recordsApplied())));
            rows.add(RunTable.row(
                    "records dead-lettered (no token)", run -> n(run.check().recordsDeadLettered())));
            rows.add(RunTable.row(
                    "records dropped (stale token)", run -> n(run.check().recordsDropped())));
        }
        rows.add(RunTable.row(
                "lost (acknowledged, missing)", run -> n(run.check().lostAcknowledged())));
        rows.add(RunTable.row("duplicated", run -> n(run.check().duplicated())));
        rows.add(RunTable.row("violations", run -> n(run.check().violations().size())));
        for (ViolationKind kind : ViolationKind.values()) {
            if (runs.stream().anyMatch(run -> run.check().violationsByKind().get(kind) > 0)) {
                rows.add(RunTable.row(
                        "  " + kind.name(),
                        run -> n(run.check().violationsByKind().get(kind))));
            }
        }
        rows.add(RunTable.row("heap MB at start (coordinator / writers max)", run -> heap(run, 0)));
        rows.add(RunTable.row(
                "heap MB at end (coordinator / writers max)",
                run -> heap(run, run.samples().size() - 1)));
        rows.add(RunTable.row(
                "fds at start / end (coordinator)",
                run -> ends(run, u -> u.coordinator().fds())));
        rows.add(RunTable.row(
                "threads at start / end (coordinator)",
                run -> ends(run, u -> u.coordinator().threads())));
        rows.add(RunTable.row(
                "fds at start / end (writers max)",
                run -> ends(run, u -> u.writers().fds())));
        rows.add(RunTable.row(
                "threads at start / end (writers max)",
                run -> ends(run, u -> u.writers().threads())));
        if (runs.stream().anyMatch(run -> run.resource().chain())) {
            rows.add(RunTable.row(
                    "fds at start / end (consumers max)",
                    run -> ends(run, u -> u.consumers().fds())));
            rows.add(RunTable.row(
                    "threads at start / end (consumers max)",
                    run -> ends(run, u -> u.consumers().threads())));
        }
        rows.add(RunTable.row(
                "workload seconds",
                run -> String.format(Locale.ROOT, "%.0f", (run.endMillis() - run.startMillis()) / 1000.0)));
        return RunTable.of(run -> run.mode().label(), rows, 46, 14);
    }

    private static String n(long value) {
        return String.format(Locale.ROOT, "%,d", value);
    }

    /** A measure at the run's first and last sample. */
    private static String ends(RunResult run, ToLongFunction<ResourceSample> measure) {
        List<ResourceSample> samples = run.samples();
        if (samples.isEmpty()) {
            return "-";
        }
        return measure.applyAsLong(samples.get(0)) + " / " + measure.applyAsLong(samples.get(samples.size() - 1));
    }

    /** The coordinator's and the largest writer's heap at a sample. */
    private static String heap(RunResult run, int sample) {
        if (run.samples().isEmpty()) {
            return "-";
        }
        ResourceSample at = run.samples().get(sample);
        return String.format(
                Locale.ROOT,
                "%.0f / %.0f",
                at.coordinator().heapBytes() / 1e6,
                at.writers().heapBytes() / 1e6);
    }
}
