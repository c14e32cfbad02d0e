package dev.fencing.verify;

import java.io.IOException;
import java.util.List;

/**
 * A small shell process that cleans up after this JVM if it dies without running its shutdown hook (SIGKILL,
 * the OOM killer): it waits for end-of-file on its standard input, a pipe only this JVM holds open, then runs
 * its commands (stop the embedded PostgreSQL, which runs as a daemon, delete the network namespaces, remove the
 * run directory). Polling this JVM's pid instead would be fooled by a reused pid. {@link #close()} stops it
 * without running anything. Deaf to SIGINT, SIGTERM and SIGHUP.
 */
final class Watchdog implements AutoCloseable {
    private final Process process;

    private Watchdog(Process process) {
        this.process = process;
    }

    /** Starts a watchdog that runs {@code commands} (shell, in order, each allowed to fail) once this JVM is gone. */
    static Watchdog start(List<String> commands) {
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
            throw new VerifyException("cannot start the cleanup watchdog: " + e.getMessage(), e);
        }
    }

    /** Stops the watchdog without running its commands (this JVM cleans up itself). */
    @Override
    public void close() {
        process.destroyForcibly();
    }
}
