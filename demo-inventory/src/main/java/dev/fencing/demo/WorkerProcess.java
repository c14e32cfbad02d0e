package dev.fencing.demo;

import dev.fencing.testsupport.ProcessFreezer;
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
 * output into {@link WorkerEvent}s, and the freeze that stops and resumes it.
 *
 * <p>Freezing is test-support's {@link ProcessFreezer}: {@code kill -STOP <pid>} stops every thread of the JVM,
 * ZooKeeper heartbeats included, so the session really expires (a {@code Thread.sleep} would not do that), and
 * its resumer sends SIGCONT as soon as this JVM dies in any way (even by SIGKILL); the thawed worker then sees
 * its own standard input end and exits. A worker that has exited on its own is not an error to freeze or thaw:
 * its exit is reported elsewhere.
 *
 * <p>Thread-safe.
 */
final class WorkerProcess implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerProcess.class);

    private final int id;
    private final Process process;
    private final Writer commands;
    private final Thread reader;
    private ProcessFreezer.Frozen frozen;

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
        return launch(id, command, environment, log, events);
    }

    /** Starts {@code command} as worker {@code id}; {@link #start} with the JVM's command line. */
    static WorkerProcess launch(
            int id, List<String> command, Map<String, String> environment, Path log, Consumer<WorkerEvent> events) {
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
     * SIGSTOP, with a resumer that sends SIGCONT after {@code limit} even if this JVM is gone by then. A worker
     * that has already exited is left as it is.
     *
     * @throws DemoException if {@code kill -STOP} fails on a live worker (nothing is left frozen then)
     */
    synchronized void freeze(Duration limit) {
        thaw();
        try {
            frozen = ProcessFreezer.freeze(pid(), limit);
        } catch (RuntimeException e) {
            if (process.isAlive()) {
                throw new DemoException("could not freeze worker " + id + " (pid " + pid() + "): " + e.getMessage(), e);
            }
            LOG.debug("worker {} exited before it could be frozen: {}", id, e.getMessage());
        }
    }

    /** SIGCONT, and the resumer is no longer needed. Safe to call when not frozen, or when the worker is gone. */
    synchronized void thaw() {
        if (frozen == null) {
            return;
        }
        try {
            frozen.close();
        } catch (RuntimeException e) {
            if (process.isAlive()) {
                throw new DemoException("could not resume worker " + id + " (pid " + pid() + "): " + e.getMessage(), e);
            }
        } finally {
            frozen = null;
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
        try {
            thaw();
        } finally {
            if (process.isAlive()) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                awaitExit(Duration.ofSeconds(5));
            }
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
