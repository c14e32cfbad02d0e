package dev.fencing.verify;

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
 * kind whose owner process is gone (pid and start time, so a reused pid does not keep one alive). Not
 * thread-safe.
 */
final class RunDirectory {
    static final String PREFIX = "verify-run-";
    private static final String OWNER = "owner";

    private final Path path;

    private RunDirectory(Path path) {
        this.path = path;
    }

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

    /** Deletes the directory; quietly, since it runs while shutting down. */
    void delete() {
        deleteTree(path);
    }

    /** Deletes run directories in {@code tmp} whose owner process is gone; returns how many. */
    static int removeAbandoned(Path tmp, PrintStream progress) {
        int removed = 0;
        try (DirectoryStream<Path> candidates = Files.newDirectoryStream(tmp, PREFIX + "*")) {
            for (Path candidate : candidates) {
                if (Files.isDirectory(candidate) && abandoned(candidate)) {
                    deleteTree(candidate);
                    progress.println("  removed " + candidate + ", left behind by a run that did not end cleanly");
                    removed++;
                }
            }
        } catch (IOException e) {
            // nothing to clean, or not allowed to look: not a reason to stop
        }
        return removed;
    }

    static boolean abandoned(Path directory) {
        String owner;
        try {
            owner = Files.readString(directory.resolve(OWNER)).trim();
        } catch (IOException e) {
            return false; // being created right now, or not ours
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

    static void deleteTree(Path root) {
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
