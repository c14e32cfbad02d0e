package dev.fencing.verify;

import dev.fencing.harness.RunTable;
import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.Violation;
import dev.fencing.verify.checker.ViolationKind;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The table printed at the end: one column per run, then each run's violations spelled out (the first {@value
 * #SPELLED_OUT} per run; the HTML report has all). Stateless.
 */
final class SummaryTable {
    static final int SPELLED_OUT = 15;

    private SummaryTable() {}

    static String of(List<RunResult> runs) {
        StringBuilder table = new StringBuilder();
        row(table, "", runs, run -> run.mode().label());
        boolean reads = runs.stream().anyMatch(run -> run.resource() == Resource.RWLOCK);
        row(
                table,
                reads ? "operations (appends, reads invoked)" : "operations (appends invoked)",
                runs,
                run -> n(run.check().operations()));
        row(
                table,
                reads ? "  ok (acknowledged, returned)" : "  ok (acknowledged)",
                runs,
                run -> n(run.check().ok()));
        row(
                table,
                reads ? "  failed (refused, discarded)" : "  failed (refused)",
                runs,
                run -> n(run.check().failed()));
        row(table, "  indeterminate (info)", runs, run -> n(run.check().indeterminate()));
        table.append("faults injected (counted / tried)\n");
        for (FaultKind kind : FaultKind.values()) {
            row(
                    table,
                    "  " + kind.jsonName(),
                    runs,
                    run -> n(run.counted().getOrDefault(kind, 0)) + " / "
                            + run.faults().stream()
                                    .filter(f -> f.kind() == kind)
                                    .count());
        }
        if (runs.stream().anyMatch(run -> run.resource().chain())) {
            row(
                    table,
                    "records produced (acknowledged)",
                    runs,
                    run -> n(run.check().recordsProduced()));
            row(table, "records applied", runs, run -> n(run.check().recordsApplied()));
            row(
                    table,
                    "records dead-lettered (no token)",
                    runs,
                    run -> n(run.check().recordsDeadLettered()));
            row(
                    table,
                    "records dropped (stale token)",
                    runs,
                    run -> n(run.check().recordsDropped()));
        }
        row(table, "lost (acknowledged, missing)", runs, run -> n(run.check().lostAcknowledged()));
        row(table, "duplicated", runs, run -> n(run.check().duplicated()));
        row(table, "violations", runs, run -> n(run.check().violations().size()));
        for (ViolationKind kind : ViolationKind.values()) {
            if (runs.stream().anyMatch(run -> run.check().violationsByKind().get(kind) > 0)) {
                row(
                        table,
                        "  " + kind.name(),
                        runs,
                        run -> n(run.check().violationsByKind().get(kind)));
            }
        }
        row(table, "heap MB at start (coordinator / writers max)", runs, run -> heap(run, 0));
        row(
                table,
                "heap MB at end (coordinator / writers max)",
                runs,
                run -> heap(run, run.samples().size() - 1));
        row(
                table,
                "fds at start / end (coordinator)",
                runs,
                run -> ends(run, u -> u.coordinator().fds()));
        row(
                table,
                "threads at start / end (coordinator)",
                runs,
                run -> ends(run, u -> u.coordinator().threads()));
        row(
                table,
                "fds at start / end (writers max)",
                runs,
                run -> ends(run, u -> u.writers().fds()));
        row(
                table,
                "threads at start / end (writers max)",
                runs,
                run -> ends(run, u -> u.writers().threads()));
        if (runs.stream().anyMatch(run -> run.resource().chain())) {
            row(
                    table,
                    "fds at start / end (consumers max)",
                    runs,
                    run -> ends(run, u -> u.consumers().fds()));
            row(
                    table,
                    "threads at start / end (consumers max)",
                    runs,
                    run -> ends(run, u -> u.consumers().threads()));
        }
        row(
                table,
                "workload seconds",
                runs,
                run -> String.format(Locale.ROOT, "%.0f", (run.endMillis() - run.startMillis()) / 1000.0));
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

    private static void row(StringBuilder table, String label, List<RunResult> runs, Function<RunResult, String> cell) {
        RunTable.row(table, label, 46, runs, cell, 14);
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
