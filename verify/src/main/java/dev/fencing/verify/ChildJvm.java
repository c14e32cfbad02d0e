package dev.fencing.verify;

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
 * The coordinator's handle on one child JVM (a writer or a consumer member): its pid, its command pipe, the
 * thread that turns its standard output into {@link ClientEvent}s, and the faults done to it as a process
 * (freeze, SIGKILL). A child started through {@code ip netns exec} has the same pid as the JVM (ip execs it).
 * Thread-safe.
 */
final class ChildJvm implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChildJvm.class);

    private final String name;
    private final int id;
    private final Process process;
    private final Writer commands;
    private final Thread reader;

    private ChildJvm(String name, int id, Process process, Consumer<ClientEvent> events) {
        this.name = name;
        this.id = id;
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.reader = new Thread(() -> read(events), name.replace(' ', '-') + "-events");
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /**
     * Starts {@code [prefix...] java -cp <this JVM's class path> main args...}.
     *
     * @param prefix a command the JVM runs under, such as {@code ip netns exec NS}; empty for none
     * @param jvmOptions extra options for the JVM
     * @param environment added to the child's environment (the JDBC password goes here, not on the command line)
     * @param log where its standard error goes (appended)
     */
    static ChildJvm start(
            String name,
            int id,
            List<String> prefix,
            List<String> jvmOptions,
            Class<?> main,
            List<String> args,
            Map<String, String> environment,
            Path log,
            Consumer<ClientEvent> events) {
        List<String> command = new ArrayList<>(prefix);
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx128m");
        command.add("-XX:+UseSerialGC");
        command.add("-XX:TieredStopAtLevel=1");
        command.addAll(jvmOptions);
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectInput(ProcessBuilder.Redirect.PIPE);
        builder.environment().putAll(environment);
        try {
            return new ChildJvm(name, id, builder.start(), events);
        } catch (IOException e) {
            throw new VerifyException("could not start " + name + " (" + command.get(0) + "): " + e.getMessage(), e);
        }
    }

    String name() {
        return name;
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

    /** The exit code, or -1 while it runs. */
    int exitCode() {
        return process.isAlive() ? -1 : process.exitValue();
    }

    /** Sends one command line; a child that is gone is ignored (its exit is noticed elsewhere). */
    synchronized void send(String command) {
        try {
            commands.write(command);
            commands.write('\n');
            commands.flush();
        } catch (IOException e) {
            LOG.debug("{} did not take command {}: {}", name, command, e.getMessage());
        }
    }

    /** SIGSTOP, with a resumer that thaws it after {@code limit} even if this JVM is gone. */
    ProcessFreezer.Frozen freeze(Duration limit) {
        return ProcessFreezer.freeze(pid(), limit);
    }

    /** SIGKILL, as a crash: nothing in the child runs any more. Waits until it is gone. */
    void kill() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(10));
    }

    /** Waits for the child to exit, and for its last events to be read. */
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

    /** Resumes (in case it is frozen) and kills the child. Safe twice, and from a shutdown hook. */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                ProcessFreezer.resume(pid());
            } catch (RuntimeException e) {
                // gone meanwhile
            }
            process.destroyForcibly();
            awaitExit(Duration.ofSeconds(5));
        }
    }

    private void read(Consumer<ClientEvent> events) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                ClientEvent.parse(name, id, line).ifPresent(events);
            }
        } catch (IOException e) {
            LOG.debug("{} output ended: {}", name, e.getMessage());
        }
    }
}
