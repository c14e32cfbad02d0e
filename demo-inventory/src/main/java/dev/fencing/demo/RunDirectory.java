package dev.fencing.demo;

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
 * The one directory under the system's temporary directory that holds the embedded servers' data of a demo
 * run (about 40 MB), so that it can be removed whole: by {@link #delete()} at the end, by the embedded
 * PostgreSQL's watchdog when this JVM is killed outright, and otherwise at the next start ({@link
 * #removeAbandoned}), which deletes only directories of this kind whose owner process is gone. Each holds
 * an {@code owner} file with the owning process's pid and start time, so a reused pid does not keep a
 * directory alive. Not thread-safe.
 */
final class RunDirectory {
    static final String PREFIX = "demo-inventory-run-";
    private static final String OWNER = "owner";

    private final Path path;

    private RunDirectory(Path path) {
        this.path = path;
    }

    /** Creates a fresh run directory owned by this process. */
    static RunDirectory create() {
        try {
            Path path = Files.createTempDirectory(PREFIX);
            Files.writeString(path.resolve(OWNER), ownerLine(ProcessHandle.current()));
            return new RunDirectory(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for the embedded servers' data", e);
        }
    }

    Path path() {
        return path;
    }

    /** Deletes the directory and everything in it; quietly, since it is called while shutting down. */
    void delete() {
        deleteTree(path);
    }

    /**
     * Deletes the run directories in {@code tmp} whose owner process is gone (a coordinator killed in a way
     * its watchdog could not clean up after). Returns how many it removed.
     */
    static int removeAbandoned(Path tmp, PrintStream progress) {
        int removed = 0;
        try (DirectoryStream<Path> candidates = Files.newDirectoryStream(tmp, PREFIX + "*")) {
            for (Path candidate : candidates) {
                if (Files.isDirectory(candidate) && abandoned(candidate)) {
                    deleteTree(candidate);
                    progress.println("  removed " + candidate + ", left behind by a demo run that did not end cleanly");
                    removed++;
                }
            }
        } catch (IOException e) {
            // nothing to clean, or not allowed to look: not a reason to stop the demo
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
            long pid = Long.parseLong(parts[0]);
            Optional<ProcessHandle> process = ProcessHandle.of(pid);
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
