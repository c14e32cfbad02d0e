package dev.fencing.harness;

import java.util.List;

/**
 * A tool's decision on its runs, as {@link Coordinator} prints it: the notes, then the failures, then (when there is
 * none) {@code passed: } and the passed line. Immutable.
 *
 * <pre>{@code
 * Verdict verdict = new Verdict(List.of(), List.of(), "the fenced run kept every property");
 * }</pre>
 *
 * @param failures one plain sentence per reason to exit with {@link Cli#EXIT_FAILURE}
 * @param notes sentences worth printing that do not fail the run, printed first
 * @param passedLine what the runs showed, printed after {@code passed: } when there is no failure
 */
public record Verdict(List<String> failures, List<String> notes, String passedLine) {
    public Verdict {
        failures = List.copyOf(failures);
        notes = List.copyOf(notes);
    }

    public boolean passed() {
        return failures.isEmpty();
    }
}
