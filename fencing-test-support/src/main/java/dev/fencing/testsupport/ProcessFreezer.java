package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

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
 * <p>{@link #freeze} returns only once the process is stopped: {@code kill -STOP} merely queues the signal,
 * and the process stops when one of its threads takes it; until then its other threads run (measured here:
 * right after {@code kill} returned, 2 of 60 JVMs had no thread stopped yet). So {@code freeze} waits until
 * every thread in {@code /proc/<pid>/task} is in state {@code T} (or {@code t}), at most {@link
 * #STOP_DEADLINE}, and fails loudly past it. A caller that tells the process to go on after {@code freeze}
 * (a "GO" down a pipe) knows that no thread of it reads the command before the resume.
 *
 * <p>Nothing is left frozen: each freeze starts a small resumer process that ignores SIGINT, SIGTERM and
 * SIGHUP and sends {@code SIGCONT} as soon as its standard input (a pipe only this JVM holds) ends, that is
 * as soon as this JVM is gone however it died (even by SIGKILL), and after {@code limit} in any case. {@link
 * Frozen#close()} resumes the process and stops the resumer without letting it send a second {@code
 * SIGCONT} (which could thaw a later freeze of the same process).
 *
 * <p>Linux ({@code /proc}) and macOS (there {@code ps} tells the process's state, not each thread's), with
 * {@code kill} and {@code sh}. Thread-safe: each {@link Frozen} is one freeze.
 */
public final class ProcessFreezer {
    /** How long {@link #freeze} waits for every thread of the process to stop before it fails. */
    public static final Duration STOP_DEADLINE = Duration.ofSeconds(10);

    private static final Path PROC = Path.of("/proc");
    /** Linux lists each thread under /proc; elsewhere (macOS) only ps can tell, and only of the process. */
    private static final boolean PROC_LISTS_THREADS =
            Files.isDirectory(PROC.resolve("self").resolve("task"));

    private ProcessFreezer() {}

    /**
     * Sends {@code SIGSTOP} to {@code pid}, with a resumer that sends {@code SIGCONT} after {@code limit} even if
     * this JVM is gone by then.
     *
     * @param limit the longest the process may stay frozen, at least one second (whole seconds, rounded up)
     * @throws IllegalArgumentException if {@code pid <= 0} or the limit is under a second
     * @throws IllegalStateException if {@code kill -STOP} fails (no such process, not allowed), or some thread
     *     of the process is still not stopped after {@link #STOP_DEADLINE}, or the process exits meanwhile;
     *     nothing is left frozen then
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
            awaitStopped(pid);
        } catch (RuntimeException e) {
            frozen.close();
            throw e;
        }
        return frozen;
    }

    /** Waits until every thread of {@code pid} is stopped; throws past {@link #STOP_DEADLINE}. */
    private static void awaitStopped(long pid) {
        long deadline = System.nanoTime() + STOP_DEADLINE.toNanos();
        while (true) {
            List<String> running = runningThreads(pid);
            // no thread that can run: stopped, unless the process is gone or a zombie
            if (ProcessHandle.of(pid).map(ProcessFreezer::isDead).orElse(true)) {
                throw new IllegalStateException("process " + pid + " exited while it was being frozen");
            }
            if (running.isEmpty()) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("process " + pid + " was sent SIGSTOP, but " + STOP_DEADLINE.toMillis()
                        + " ms later these threads of it were still not stopped (thread id: state): " + running);
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("interrupted while waiting for process " + pid + " to stop");
            }
            LockSupport.parkNanos(200_000);
        }
    }

    /**
     * The threads of {@code pid} that can still run, as "tid: state" (empty once all are stopped, or when the
     * process is gone). A thread stopped by a signal or a tracer ({@code T}, {@code t}), a zombie ({@code Z}) and
     * one that is gone ({@code X}, or no longer listed) cannot run; every other state can, or will (a thread in
     * {@code D} stops when its system call returns).
     */
    static List<String> runningThreads(long pid) {
        if (!PROC_LISTS_THREADS) {
            return processStateByPs(pid);
        }
        List<String> running = new ArrayList<>();
        try (DirectoryStream<Path> tasks =
                Files.newDirectoryStream(PROC.resolve(Long.toString(pid)).resolve("task"))) {
            for (Path task : tasks) {
                char state = stateOf(task.resolve("stat"));
                if ("TtZX-".indexOf(state) < 0) {
                    running.add(task.getFileName() + ": " + state);
                }
            }
        } catch (NoSuchFileException gone) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the threads of process " + pid, e);
        }
        return running;
    }

    /** The state letter in a {@code stat} file, {@code '-'} if the thread is gone. */
    private static char stateOf(Path stat) {
        try {
            String line = Files.readString(stat);
            int afterName = line.lastIndexOf(')'); // the name may hold spaces and parentheses
            return afterName > 0 && line.length() > afterName + 2 ? line.charAt(afterName + 2) : '-';
        } catch (IOException gone) {
            return '-';
        }
    }

    /** Gone, or a zombie: it runs nothing any more, whether or not its parent has reaped it yet. */
    static boolean isDead(ProcessHandle process) {
        if (!process.isAlive()) {
            return true;
        }
        char state = stateOf(PROC.resolve(Long.toString(process.pid())).resolve("stat"));
        return state == 'Z' || state == 'X';
    }

    /** Without {@code /proc} (macOS): the process's own state from {@code ps}, as one entry if not stopped. */
    private static List<String> processStateByPs(long pid) {
        try {
            Process ps = new ProcessBuilder("ps", "-o", "stat=", "-p", Long.toString(pid))
                    .redirectErrorStream(true)
                    .start();
            String state = new String(ps.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            ps.waitFor(10, TimeUnit.SECONDS);
            return state.isEmpty() || state.startsWith("T") || state.startsWith("Z") ? List.of() : List.of(state);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run ps for process " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the state of process " + pid, e);
        }
    }

    /** Sends {@code SIGCONT} to {@code pid}; harmless when it is not stopped. */
    public static void resume(long pid) {
        signal("CONT", pid);
    }

    /**
     * Whether every thread of {@code pid} is stopped right now; false when there is no such process.
     */
    public static boolean isStopped(long pid) {
        return runningThreads(pid).isEmpty()
                && !ProcessHandle.of(pid).map(ProcessFreezer::isDead).orElse(true);
    }

    private static void signal(String signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                    .redirectErrorStream(true)
                    .start();
            String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            // the signal is sent once kill has run: an interrupt must not turn a sent signal into a failure
            boolean interrupted = false;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (kill.isAlive() && System.nanoTime() - deadline < 0) {
                try {
                    kill.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            if (kill.isAlive()) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill -" + signal + " " + pid + " did not finish within 10 s");
            }
            if (kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run kill -" + signal + " " + pid, e);
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

        /** The resumer and its children as they are now (for tests of {@link #close()}). */
        synchronized List<ProcessHandle> resumerTree() {
            if (resumer == null) {
                return List.of();
            }
            List<ProcessHandle> tree = new ArrayList<>();
            tree.add(resumer.toHandle());
            resumer.descendants().forEach(tree::add);
            return tree;
        }

        /** How long the process has been frozen (until {@link #close()}, then how long it was). */
        public synchronized Duration elapsed() {
            long end = resumer == null ? resumedAtNanos : System.nanoTime();
            return Duration.ofNanos(end - frozenAtNanos);
        }

        /**
         * Sends {@code SIGCONT} and stops the resumer. A process that has exited meanwhile is not an error. If
         * the {@code SIGCONT} cannot be sent, the resumer is told to send it instead (its input is closed), and
         * the failure is thrown.
         */
        @Override
        public synchronized void close() {
            if (resumer == null) {
                return;
            }
            resumedAtNanos = System.nanoTime();
            try {
                if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                    signal("CONT", pid);
                }
            } catch (RuntimeException e) {
                closeInput(); // the resumer's cat ends, and it sends the SIGCONT itself
                resumer = null;
                throw e;
            }
            // Parents before children: a shell whose child ends runs its next command, and here that is a
            // kill -CONT (the resumer's after cat, the timer's after sleep), which could thaw a later freeze.
            killTree(resumer.toHandle());
            closeInput();
            resumer = null;
        }

        private void closeInput() {
            try {
                resumer.getOutputStream().close();
            } catch (IOException e) {
                // the pipe to a killed process: nothing to flush
            }
        }

        /** Kills {@code process}, waits until it is dead, then does the same to each of its children. */
        private static void killTree(ProcessHandle process) {
            List<ProcessHandle> children = process.children().toList();
            process.destroyForcibly();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            // dead once it is gone or a zombie: it runs no command any more, reaped or not
            while (!isDead(process) && System.nanoTime() - deadline < 0) {
                LockSupport.parkNanos(200_000);
            }
            children.forEach(Frozen::killTree);
        }
    }
}
