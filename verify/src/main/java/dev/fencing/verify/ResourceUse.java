package dev.fencing.verify;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What a process holds at one moment: heap in use after a full collection, open file descriptors, live threads.
 * Descriptors and threads come from Linux's {@code /proc}; 0 where it cannot be read (another system, a process
 * that has exited).
 */
record ResourceUse(long heapBytes, long fds, long threads) {
    static final ResourceUse NONE = new ResourceUse(0, 0, 0);

    /** The larger of each measure. */
    ResourceUse max(ResourceUse other) {
        return new ResourceUse(
                Math.max(heapBytes, other.heapBytes), Math.max(fds, other.fds), Math.max(threads, other.threads));
    }

    /** This JVM, after a full collection. */
    static ResourceUse self() {
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        return of(ProcessHandle.current().pid(), heap);
    }

    /** Process {@code pid}, whose heap after a collection it reported itself. */
    static ResourceUse of(long pid, long heapBytes) {
        Path proc = Path.of("/proc", Long.toString(pid));
        return new ResourceUse(heapBytes, descriptors(proc), threads(proc));
    }

    private static long descriptors(Path proc) {
        try (Stream<Path> fds = Files.list(proc.resolve("fd"))) {
            return fds.count();
        } catch (IOException | SecurityException e) {
            return 0;
        }
    }

    private static long threads(Path proc) {
        try (Stream<String> lines = Files.lines(proc.resolve("status"))) {
            return lines.filter(line -> line.startsWith("Threads:"))
                    .mapToLong(line ->
                            Long.parseLong(line.substring("Threads:".length()).trim()))
                    .findFirst()
                    .orElse(0);
        } catch (IOException | SecurityException | NumberFormatException e) {
            return 0;
        }
    }
}
