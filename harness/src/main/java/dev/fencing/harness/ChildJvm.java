package dev.fencing.harness;

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
 * The coordinator's handle on one child JVM (a worker, a writer, a consumer member): its pid, its command pipe
 * (lines on its standard input), the thread that hands each line of its standard output to the tool, and the
 * faults done to it as a process: freezing and SIGKILL. A child started through {@code ip netns exec} has the same
 * pid as the JVM (ip execs it).
 *
 * <p>Freezing is fencing-test-support's {@link ProcessFreezer}: {@code kill -STOP <pid>} stops every thread of the JVM,
 * ZooKeeper heartbeats included, so its session really expires (a {@code Thread.sleep} would not do that), and its
 * resumer sends SIGCONT as soon as this JVM dies in any way (even by SIGKILL). A child that has exited on its own is
 * not an error to freeze or thaw: its exit is noticed elsewhere.
 *
 * <p>Thread-safe.
 *
 * <pre>{@code
 * ChildJvm worker = ChildJvm.start("worker 1", 1, List.of(), List.of("-Xmx256m"), WorkerMain.class.getName(),
 *         args, Map.of(), log, line -> events.add(line));
 * worker.freeze(Duration.ofSeconds(10)); // SIGSTOP; SIGCONT at the latest after 10 s
 * worker.thaw();
 * worker.close();
 * }</pre>
 */
public final class ChildJvm implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChildJvm.class);

    private final String name;
    private final int id;
    private final Process process;
    private final Writer commands;
    private final Thread reader;
    private ProcessFreezer.Frozen frozen;

    private ChildJvm(String name, int id, Process process, Consumer<String> lines) {
        this.name = name;
        this.id = id;
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.reader = new Thread(() -> read(lines), name.replace(' ', '-') + "-events");
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /**
     * Starts {@code [prefix...] java [jvmOptions...] -cp <this JVM's class path> mainClass args...}.
     *
     * @param name the child in messages ({@code worker 3})
     * @param prefix a command the JVM runs under, such as {@code ip netns exec NS}; empty for none
     * @param jvmOptions options for the JVM, the heap size among them
     * @param environment added to the child's environment (a JDBC password goes here, not on the command line)
     * @param log where its standard error goes (appended)
     * @param lines receives every line of its standard output, on this child's reader thread
     * @throws HarnessException if the JVM cannot be started
     */
    public static ChildJvm start(
            String name,
            int id,
            List<String> prefix,
            List<String> jvmOptions,
            String mainClass,
            List<String> args,
            Map<String, String> environment,
            Path log,
            Consumer<String> lines) {
        List<String> command = new ArrayList<>(prefix);
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-XX:+UseSerialGC");
        command.add("-XX:TieredStopAtLevel=1");
        command.addAll(jvmOptions);
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass);
        command.addAll(args);
        return launch(name, id, command, environment, log, lines);
    }

    /** Starts {@code command} (any program) as child {@code name}; {@link #start} with a JVM's command line. */
    public static ChildJvm launch(
            String name,
            int id,
            List<String> command,
            Map<String, String> environment,
            Path log,
            Consumer<String> lines) {
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectInput(ProcessBuilder.Redirect.PIPE);
        builder.environment().putAll(environment);
        try {
            return new ChildJvm(name, id, builder.start(), lines);
        } catch (IOException e) {
            throw new HarnessException("could not start " + name + " (" + command.get(0) + "): " + e.getMessage(), e);
        }
    }

    public String name() {
        return name;
    }

    public int id() {
        return id;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** The exit code, or -1 while it runs. */
    public int exitCode() {
        return process.isAlive() ? -1 : process.exitValue();
    }

    /** Sends one command line; a child that is gone is ignored (its exit is noticed elsewhere). */
    public synchronized void send(String command) {
        try {
            commands.write(command);
            commands.write('\n');
            commands.flush();
        } catch (IOException e) {
            LOG.debug("{} did not take command {}: {}", name, command, e.getMessage());
        }
    }

    /**
     * SIGSTOP, with a resumer that sends SIGCONT after {@code limit} even if this JVM is gone by then; returns when
     * every thread of the child is stopped. A child that has already exited is left as it is.
     *
     * @throws HarnessException if {@code kill -STOP} fails on a live child (nothing is left frozen then)
     */
    public synchronized void freeze(Duration limit) {
        thaw();
        try {
            frozen = ProcessFreezer.freeze(pid(), limit);
        } catch (RuntimeException e) {
            if (process.isAlive()) {
                throw new HarnessException("could not freeze " + name + " (pid " + pid() + "): " + e.getMessage(), e);
            }
            LOG.debug("{} exited before it could be frozen: {}", name, e.getMessage());
        }
    }

    /** SIGCONT, and the resumer is no longer needed. Safe to call when not frozen, or when the child is gone. */
    public synchronized void thaw() {
        if (frozen == null) {
            return;
        }
        try {
            frozen.close();
        } catch (RuntimeException e) {
            if (process.isAlive()) {
                throw new HarnessException("could not resume " + name + " (pid " + pid() + "): " + e.getMessage(), e);
            }
        } finally {
            frozen = null;
        }
    }

    /** SIGKILL, as a crash: nothing in the child runs any more. Waits until it is gone. */
    public void kill() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(10));
    }

    /**
     * Waits for the child to exit, and for its last lines to be read: the process can be gone while its final
     * lines still sit in the pipe, and counting before they are read loses them.
     */
    public boolean awaitExit(Duration timeout) {
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

    /**
     * Thaws and kills the child (and its own children, if any). Safe to call twice, and from a shutdown hook.
     */
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

    private void read(Consumer<String> lines) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                lines.accept(line);
            }
        } catch (IOException e) {
            LOG.debug("{} output ended: {}", name, e.getMessage());
        }
    }
}
