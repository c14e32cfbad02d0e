package dev.fencing.harness;

import java.io.IOException;
import java.util.List;

/**
 * A small shell process that cleans up after this JVM if it dies without running its shutdown hook (SIGKILL,
 * the OOM killer): it waits for end-of-file on its standard input, a pipe only this JVM holds open, then runs
 * its commands (stop the embedded PostgreSQL, which runs as a daemon, delete network namespaces, remove the run
 * directory). Polling this JVM's pid instead would be fooled by a reused pid (pid_max is 32768 on many machines,
 * and threads draw from the same ids). {@link #close()} stops it without running anything. Deaf to SIGINT,
 * SIGTERM and SIGHUP. Thread-safe.
 *
 * <pre>{@code
 * Watchdog watchdog = Watchdog.start(List.of("rm -rf '" + runDirectory.path() + "'"));
 * ...
 * watchdog.close(); // this JVM cleaned up itself
 * }</pre>
 */
public final class Watchdog implements AutoCloseable {
    private final Process process;

    private Watchdog(Process process) {
        this.process = process;
    }

    /**
     * Starts a watchdog that runs {@code commands} (shell, in order, each allowed to fail) once this JVM is gone.
     *
     * @throws HarnessException if {@code sh} cannot be started
     */
    public static Watchdog start(List<String> commands) {
        StringBuilder script = new StringBuilder("trap '' INT TERM HUP; cat >/dev/null;");
        for (String command : commands) {
            script.append(' ').append(command).append(" >/dev/null 2>&1;");
        }
        try {
            return new Watchdog(new ProcessBuilder("sh", "-c", script.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start());
        } catch (IOException e) {
            throw new HarnessException("cannot start the cleanup watchdog: " + e.getMessage(), e);
        }
    }

    /**
     * The commands that stop a PostgreSQL server by its postmaster's pid: a fast shutdown (SIGINT), and an
     * immediate one (SIGQUIT) if it is still up 10 s later.
     */
    public static List<String> stopPostgres(long postmasterPid) {
        return List.of(
                "kill -INT " + postmasterPid,
                "i=0; while kill -0 " + postmasterPid + " 2>/dev/null && [ $i -lt 20 ]; do sleep 0.5; i=$((i+1)); done",
                "kill -QUIT " + postmasterPid);
    }

    /** Stops the watchdog without running its commands (this JVM cleans up itself). Safe twice. */
    @Override
    public void close() {
        process.destroyForcibly();
    }
}
