package dev.fencing.lock.zookeeper;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/** Starts a test main in a JVM of its own, on this JVM's class path, and reads its output line by line. */
final class ChildJvm {
    private ChildJvm() {}

    /** Starts {@code main}; its standard error goes to {@code target/<main>.log}. */
    static Process start(Class<?> main, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                main.getName()));
        command.addAll(List.of(args));
        File log = Path.of("target", main.getSimpleName() + "-" + System.nanoTime() + ".log")
                .toFile();
        return new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.to(log))
                .start();
    }

    /** The child's standard output, a line at a time, as it comes. */
    static BlockingQueue<String> lines(Process process) {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the child ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        return lines;
    }
}
