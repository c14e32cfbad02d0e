package dev.fencing.harness;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;

/**
 * The run skeleton the tools share, from checked settings to an exit code: the preflight checks, the settings line,
 * the servers opened once for every mode of an {@link Experiment} (registered with {@link ExitCleanup} while they
 * run, so Ctrl-C stops them), each mode run in turn, then the side-by-side table on the console, the HTML report and
 * the JSON summary, and the verdict. Stateless; one run at a time per experiment.
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     Coordinator.exit("demo-inventory", "the workers and the servers were stopped", () -> execute(args));
 * }
 * public Integer call() throws InterruptedException {  // picocli's, after the flags were parsed
 *     return Coordinator.run(new InventoryExperiment(settings()), System.out);
 * }
 * }</pre>
 */
public final class Coordinator {
    private Coordinator() {}

    /**
     * A tool's {@code main}: runs {@code execute}, stops whatever it left registered with {@link ExitCleanup} and
     * exits with its code. Ended early (Ctrl-C, SIGTERM), the tool says {@code <tool>: interrupted; <stopped>}.
     */
    public static void exit(String tool, String stopped, IntSupplier execute) {
        ExitCleanup.onInterrupt(() -> System.err.println(tool + ": interrupted; " + stopped));
        int code = execute.getAsInt();
        ExitCleanup.finished();
        ExitCleanup.cleanUp();
        System.exit(code);
    }

    /**
     * Checks, runs every mode, reports, judges.
     *
     * @return {@value Cli#EXIT_OK} when the verdict passed, else {@value Cli#EXIT_FAILURE}
     * @throws UsageException when the platform or an output file cannot serve the run (before anything starts)
     */
    public static <S extends AutoCloseable, M, R> int run(Experiment<S, M, R> experiment, PrintStream progress)
            throws InterruptedException {
        Experiment.Plan<M> plan = experiment.plan();
        Experiment.Outputs outputs = plan.outputs();
        preflight(plan.tool(), outputs);
        progress.println(plan.tool() + ": " + plan.settings());
        List<R> runs = runModes(experiment, progress);
        progress.println();
        progress.print(experiment.table(runs));
        Cli.write(outputs.htmlFlag(), outputs.html(), experiment.html(runs));
        progress.println(outputs.htmlName() + ": " + outputs.html().toAbsolutePath());
        if (outputs.json() != null) {
            Cli.write(outputs.jsonFlag(), outputs.json(), experiment.json(runs));
            progress.println("JSON summary: " + outputs.json().toAbsolutePath());
        }
        Verdict verdict = experiment.verdict(runs);
        verdict.notes().forEach(progress::println);
        verdict.failures().forEach(progress::println);
        if (verdict.passed()) {
            progress.println("passed: " + verdict.passedLine());
            return Cli.EXIT_OK;
        }
        return Cli.EXIT_FAILURE;
    }

    /**
     * Opens the experiment's servers, runs every mode on them and stops them, also when a run fails; on Ctrl-C
     * {@link ExitCleanup} stops them.
     */
    public static <S extends AutoCloseable, M, R> List<R> runModes(Experiment<S, M, R> experiment, PrintStream progress)
            throws InterruptedException {
        S servers = experiment.open(progress);
        ExitCleanup.register(servers);
        try {
            return runModes(experiment, servers, progress);
        } finally {
            ExitCleanup.unregister(servers);
            close(servers);
        }
    }

    /** Runs every mode on servers already open, leaving them open (a test that runs several starts them once). */
    public static <S extends AutoCloseable, M, R> List<R> runModes(
            Experiment<S, M, R> experiment, S servers, PrintStream progress) throws InterruptedException {
        Experiment.Runner<M, R> runner = experiment.prepare(servers, progress);
        List<R> runs = new ArrayList<>();
        for (M mode : experiment.plan().modes()) {
            runs.add(runner.run(mode));
        }
        return runs;
    }

    /** The platform can freeze processes and the reports can be written: a long run does not end on either. */
    private static void preflight(String tool, Experiment.Outputs outputs) {
        try {
            Preflight.checkPlatform(tool, System.getProperty("os.name"));
            Preflight.checkOutput(outputs.htmlFlag(), outputs.html());
            if (outputs.json() != null) {
                Preflight.checkOutput(outputs.jsonFlag(), outputs.json());
            }
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    private static void close(AutoCloseable servers) {
        try {
            servers.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new HarnessException("cannot stop the servers: " + e.getMessage(), e);
        }
    }
}
