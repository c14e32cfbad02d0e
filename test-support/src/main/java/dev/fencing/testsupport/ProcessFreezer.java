package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Freezes a process with {@code SIGSTOP} and resumes it with {@code SIGCONT}, the way a long stop-the-world
 * GC pause freezes a JVM: every thread stops, ZooKeeper heartbeats included, so the process's session really
 * expires (a {@code Thread.sleep} in the process would not do that: its heartbeat thread keeps running).
 *
 * <pre>{@code
 * try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(worker.pid(), Duration.ofSeconds(30))) {
 *     awaitSessionExpiry();          // the worker holds its lock node, but it is frozen
 * }                                  // SIGCONT: the worker carries on as if nothing happened
 * }</pre>
 *
 * <p>Nothing is left frozen: each freeze starts a small resumer process that ignores SIGINT, SIGTERM and
 * SIGHUP and sends {@code SIGCONT} as soon as its standard input (a pipe only this JVM holds) ends, that is
 * as soon as this JVM is gone however it died (even by SIGKILL), and after {@code limit} in any case. {@link
 * Frozen#close()} resumes the process and stops the resumer.
 *
 * <p>Linux and macOS ({@code kill}, {@code sh}). Thread-safe: each {@link Frozen} is one freeze.
 */
public final class ProcessFreezer {
    private ProcessFreezer() {}

    /**
     * Sends {@code SIGSTOP} to {@code pid}, with a resumer that sends {@code SIGCONT} after {@code limit} even if
     * this JVM is gone by then.
     *
     * @param limit the longest the process may stay frozen, at least one second (whole seconds, rounded up)
     * @throws IllegalArgumentException if {@code pid <= 0} or the limit is under a second
     * @throws IllegalStateException if {@code kill -STOP} fails (no such process, not allowed); nothing is
     *     left frozen then
     */
    public static Frozen freeze(long pid, Duration limit) {
        Objects.requireNonNull(limit, "limit");
        if (pid <= 0) {
            throw new IllegalArgumentException("pid must be positive, got " + pid);
        }
        if (limit.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("limit must be at least 1s, got " + limit);
        }
        long seconds = (limit.toMillis() + 999) / 1_000;
        Process resumer;
        try {
            resumer = new ProcessBuilder(
                            "sh",
                            "-c",
                            "trap '' INT TERM HUP; (sleep " + seconds + "; kill -CONT " + pid + ") & cat >/dev/null;"
                                    + " kill -CONT " + pid)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the resumer for process " + pid, e);
        }
        Frozen frozen = new Frozen(pid, resumer);
        try {
            signal("STOP", pid);
        } catch (RuntimeException e) {
            frozen.close();
            throw e;
        }
        return frozen;
    }

    /** Sends {@code SIGCONT} to {@code pid}; harmless when it is not stopped. */
    public static void resume(long pid) {
        signal("CONT", pid);
    }

    /**
     * Whether {@code pid} is stopped right now (its state in {@code /proc/<pid>/stat} is {@code T}); false where
     * there is no {@code /proc} or no such process.
     */
    public static boolean isStopped(long pid) {
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Long.toString(pid), "stat"));
            int afterName = stat.lastIndexOf(')');
            return afterName > 0 && stat.length() > afterName + 2 && stat.charAt(afterName + 2) == 'T';
        } catch (IOException e) {
            return false;
        }
    }

    private static void signal(String signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                    .redirectErrorStream(true)
                    .start();
            String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!kill.waitFor(10, TimeUnit.SECONDS)) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill -" + signal + " " + pid + " did not finish within 10 s");
            }
            if (kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run kill -" + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while sending SIG" + signal + " to " + pid, e);
        }
    }

    /** One freeze; {@link #close()} resumes the process. Thread-safe; closing twice is harmless. */
    public static final class Frozen implements AutoCloseable {
        private final long pid;
        private final long frozenAtNanos = System.nanoTime();
        private long resumedAtNanos;
        private Process resumer;

        private Frozen(long pid, Process resumer) {
            this.pid = pid;
            this.resumer = resumer;
        }

        public long pid() {
            return pid;
        }

        /** How long the process has been frozen (until {@link #close()}, then how long it was). */
        public synchronized Duration elapsed() {
            long end = resumer == null ? resumedAtNanos : System.nanoTime();
            return Duration.ofNanos(end - frozenAtNanos);
        }

        /**
         * Sends {@code SIGCONT} and stops the resumer. A process that has exited meanwhile is not an error.
         */
        @Override
        public synchronized void close() {
            if (resumer == null) {
                return;
            }
            try {
                if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                    signal("CONT", pid);
                }
            } finally {
                resumedAtNanos = System.nanoTime();
                resumer.descendants().forEach(ProcessHandle::destroyForcibly); // its sleep
                resumer.destroyForcibly();
                try {
                    resumer.getOutputStream().close();
                } catch (IOException e) {
                    // the pipe to a killed process: nothing to flush
                }
                resumer = null;
            }
        }
    }
}
