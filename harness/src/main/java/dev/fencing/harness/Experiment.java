package dev.fencing.harness;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * A tool's part of a {@link Coordinator} run: its servers, one mode's run on them, its reports and its verdict. The
 * coordinator does the rest in the same order for every tool (checks before anything starts, the servers opened
 * once for every mode and closed after the last, also on Ctrl-C, the table, the HTML and JSON files, the exit code).
 *
 * <pre>{@code
 * int code = Coordinator.run(new InventoryExperiment(settings), System.out);
 * }</pre>
 *
 * @param <S> the servers the runs share
 * @param <M> a mode: what differs between the runs (without fencing, with it)
 * @param <R> one mode's result
 */
public interface Experiment<S extends AutoCloseable, M, R> {

    /** What runs and where its reports go, all known before anything starts. */
    Plan<M> plan();

    /** Starts or reaches the servers (and says which on {@code progress}). */
    S open(PrintStream progress);

    /** What comes before the first mode on open servers (checks, a warm-up); returns what runs each mode. */
    Runner<M, R> prepare(S servers, PrintStream progress) throws InterruptedException;

    /** The console's side-by-side table, one column per run. */
    String table(List<R> runs);

    /** The HTML report (a table and a timeline per run). */
    String html(List<R> runs);

    /** The JSON summary. */
    String json(List<R> runs);

    /** What the runs show, and whether the tool passes. */
    Verdict verdict(List<R> runs);

    /** Runs one mode on the servers. */
    @FunctionalInterface
    interface Runner<M, R> {
        R run(M mode) throws InterruptedException;
    }

    /**
     * What an experiment runs and where its reports go.
     *
     * @param tool the tool's name, first on its settings line ({@code demo-inventory: ...})
     * @param settings the settings, printed after the tool's name before anything starts
     * @param modes the modes, in the order they run
     * @param outputs where the reports go, checked before anything starts
     */
    record Plan<M>(String tool, String settings, List<M> modes, Outputs outputs) {
        public Plan {
            modes = List.copyOf(modes);
        }
    }

    /**
     * Where the reports go.
     *
     * @param htmlFlag the flag that names the HTML file, for messages
     * @param html the HTML report
     * @param htmlName what the console calls it ({@code HTML report})
     * @param jsonFlag the flag that names the JSON file, for messages
     * @param json the JSON summary, or {@code null} for none
     */
    record Outputs(String htmlFlag, Path html, String htmlName, String jsonFlag, Path json) {}
}
