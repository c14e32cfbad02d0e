package dev.fencing.harness;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The child's side of a {@link ChildJvm}: hands each command line from standard input (the coordinator's pipe) to
 * the child, and ends the child's JVM at once ({@link Runtime#halt}) when that pipe ends or the process that
 * started it is gone, however the coordinator died: nothing is left running. Start it once, at the child's start.
 *
 * <pre>{@code
 * ParentLink.listen("worker", this::command, EXIT_PARENT_GONE);
 * }</pre>
 */
public final class ParentLink {
    private ParentLink() {}

    /**
     * Starts two daemon threads: one reads commands (trimmed lines) into {@code commands}, one watches the parent
     * process every 500 ms; either halts the JVM with {@code exitCode} when the coordinator is gone.
     *
     * @param name prefix of the threads' names
     */
    public static void listen(String name, Consumer<String> commands, int exitCode) {
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader in =
                            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                        for (String line = in.readLine(); line != null; line = in.readLine()) {
                            commands.accept(line.trim());
                        }
                    } catch (IOException e) {
                        // treated as the end of input
                    }
                    Runtime.getRuntime().halt(exitCode);
                },
                name + "-commands");
        reader.setDaemon(true);
        reader.start();
        Optional<ProcessHandle> parent = ProcessHandle.current().parent();
        if (parent.isPresent()) {
            ProcessHandle original = parent.get();
            Thread watchdog = new Thread(
                    () -> {
                        while (original.isAlive()) {
                            try {
                                Thread.sleep(500);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                                return;
                            }
                        }
                        Runtime.getRuntime().halt(exitCode);
                    },
                    name + "-parent-watchdog");
            watchdog.setDaemon(true);
            watchdog.start();
        }
    }
}
