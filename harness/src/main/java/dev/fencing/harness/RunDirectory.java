package dev.fencing.harness;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The one directory under the system's temporary directory that holds the embedded servers' data of a run, so
 * that it can be removed whole: by {@link #delete()} at the end, by the {@link Watchdog} when this JVM is killed
 * outright, and otherwise at the next start ({@link #removeAbandoned}), which deletes only directories of this
 * kind (same prefix) whose owner process is gone. Each holds an {@code owner} file with the owning process's pid
 * and start time, so a reused pid does not keep a directory alive. Not thread-safe.
 */
public final class RunDirectory {
    private static final String OWNER = "owner";

    private final Path path;

    private RunDirectory(Path path) {
        this.path = path;
    }

    /** Creates a fresh run directory, named {@code prefix} and a random suffix, owned by this process. */
    public static RunDirectory create(String prefix) {
        try {
            Path path = Files.createTempDirectory(prefix);
            Files.writeString(path.resolve(OWNER), ownerLine(ProcessHandle.current()));
            return new RunDirectory(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for the embedded servers' data", e);
        }
    }

    public Path path() {
        return path;
    }

    /** Deletes the directory and everything in it; quietly, since it runs while shutting down. */
    public void delete() {
        deleteTree(path);
    }

    /**
     * Deletes the run directories named {@code prefix...} in {@code tmp} whose owner process is gone (a tool
     * killed in a way its watchdog could not clean up after), saying so on {@code progress} in the words
     * "left behind by {@code whose} that did not end cleanly". Returns how many it removed.
     */
    public static int removeAbandoned(Path tmp, String prefix, String whose, PrintStream progress) {
        int removed = 0;
        try (DirectoryStream<Path> candidates = Files.newDirectoryStream(tmp, prefix + "*")) {
            for (Path candidate : candidates) {
                if (Files.isDirectory(candidate) && abandoned(candidate)) {
                    deleteTree(candidate);
                    progress.println(
                            "  removed " + candidate + ", left behind by " + whose + " that did not end cleanly");
                    removed++;
                }
            }
        } catch (IOException e) {
            // nothing to clean, or not allowed to look: not a reason to stop
        }
        return removed;
    }

    /** Whether the process named in {@code directory}'s owner file no longer runs (pid and start time). */
    static boolean abandoned(Path directory) {
        String owner;
        try {
            owner = Files.readString(directory.resolve(OWNER)).trim();
        } catch (IOException e) {
            return false; // being created right now, or not ours: leave it
        }
        String[] parts = owner.split(" ");
        if (parts.length != 2) {
            return false;
        }
        try {
            Optional<ProcessHandle> process = ProcessHandle.of(Long.parseLong(parts[0]));
            return process.isEmpty() || !ownerLine(process.get()).equals(owner);
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static String ownerLine(ProcessHandle process) {
        long started = process.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
        return process.pid() + " " + started;
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // best effort: the next start removes what is left
        }
    }
}
