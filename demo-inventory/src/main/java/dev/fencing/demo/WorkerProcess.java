package dev.fencing.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator's handle on one worker JVM: its pid, its command pipe, the thread that turns its standard
 * output into {@link WorkerEvent}s, and the signals that freeze and resume it.
 *
 * <p>Freezing is {@code kill -STOP <pid>}: every thread of the JVM stops, ZooKeeper heartbeats included, so
 * the session really expires (a {@code Thread.sleep} would not do that). Each freeze also starts a small
 * resumer process that ignores SIGINT, SIGTERM and SIGHUP and sends SIGCONT as soon as its standard input (a
 * pipe from this JVM) ends, or after a time limit: if this JVM dies in any way while a worker is frozen (even
 * by SIGKILL), the resumer thaws the worker at once, which then sees its own standard input end and exits. {@link #thaw()} kills the resumer once it is not needed.
 *
 * <p>Thread-safe.
 */
final class WorkerProcess implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerProcess.class);

    private final int id;
    private final Process process;
    private final Writer commands;
    private final Thread reader;
    private Process resumer;

    private WorkerProcess(int id, Process process, Consumer<WorkerEvent> events) {
        this.id = id;
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.reader = new Thread(() -> read(events), "worker-" + id + "-events");
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /**
     * Starts {@code java -cp <this JVM's class path> dev.fencing.demo.WorkerMain args...}.
     *
     * @param environment added to the child's environment (the JDBC password goes here, not on the command line)
     * @param log where the worker's standard error goes
     * @param events receives every event, on this worker's reader thread
     */
    static WorkerProcess start(
            int id, List<String> args, Map<String, String> environment, Path log, Consumer<WorkerEvent> events) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx256m");
        command.add("-XX:+UseSerialGC");
        command.add("-XX:TieredStopAtLevel=1");
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(WorkerMain.class.getName());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectInput(ProcessBuilder.Redirect.PIPE);
        builder.environment().putAll(environment);
        try {
            return new WorkerProcess(id, builder.start(), events);
        } catch (IOException e) {
            throw new DemoException("could not start worker " + id + " (" + command.get(0) + "): " + e.getMessage(), e);
        }
    }

    int id() {
        return id;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Sends one command line; a worker that is gone is ignored (its exit is reported elsewhere). */
    synchronized void send(String command) {
        try {
            commands.write(command);
            commands.write('\n');
            commands.flush();
        } catch (IOException e) {
            LOG.debug("worker {} did not take command {}: {}", id, command, e.getMessage());
        }
    }

    /**
     * SIGSTOP, with a resumer that sends SIGCONT after {@code limit} even if this JVM is gone by then.
     *
     * @throws DemoException if {@code kill} fails
     */
    synchronized void freeze(Duration limit) {
        long seconds = Math.max(1, (limit.toMillis() + 999) / 1_000);
        try {
            // Resumes the worker as soon as its standard input, a pipe only this JVM holds open, ends (this
            // JVM died, however it died), and after the limit in any case.
            resumer = new ProcessBuilder(
                            "sh",
                            "-c",
                            "trap '' INT TERM HUP; (sleep " + seconds + "; kill -CONT " + pid()
                                    + ") & cat >/dev/null; kill -CONT " + pid())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            throw new DemoException("could not start the resumer for worker " + id + ": " + e.getMessage(), e);
        }
        signal("STOP");
    }

    /** SIGCONT, and the resumer is no longer needed. Safe to call when not frozen. */
    synchronized void thaw() {
        signal("CONT");
        stopResumer();
    }

    private void stopResumer() {
        if (resumer != null) {
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

    /**
     * Waits for the worker to exit on its own, and for its last events to be read: the process can be gone
     * while its final lines (a rejected write, a publish) still sit in the pipe, and counting before they are
     * read loses them.
     */
    boolean awaitExit(Duration timeout) {
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return false;
            }
            reader.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            return !reader.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Thaws and kills the worker (and the JVM's children, if any). Safe to call twice, from a shutdown hook too. */
    @Override
    public void close() {
        if (process.isAlive()) {
            thaw();
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            awaitExit(Duration.ofSeconds(5));
        } else {
            synchronized (this) {
                stopResumer();
            }
        }
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid()))
                    .redirectErrorStream(true)
                    .start();
            String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                if (process.isAlive()) {
                    throw new DemoException("kill -" + signal + " " + pid() + " (worker " + id + ") failed: " + output);
                }
            }
        } catch (IOException e) {
            throw new DemoException("could not run kill -" + signal + " " + pid() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while sending SIG" + signal + " to worker " + id, e);
        }
    }

    private void read(Consumer<WorkerEvent> events) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                WorkerEvent.parse(line, id).ifPresent(events);
            }
        } catch (IOException e) {
            LOG.debug("worker {} output ended: {}", id, e.getMessage());
        }
    }
}
