package dev.fencing.harness;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a run's coordinator started (embedded servers, watchdogs, network namespaces) and the {@link RunDirectory}
 * their data is in: {@link #close()} stops them newest first, quietly, then deletes the directory. Not
 * thread-safe; the coordinator owns it.
 *
 * <pre>{@code
 * StartedServers started = new StartedServers();
 * Path data = started.runDirectory("demo-inventory-run-", "a demo run", progress);
 * EmbeddedZooKeeper zk = started.add(EmbeddedZooKeeper.builder().dataDirectory(data.resolve("zk")).build());
 * ...
 * started.close();
 * }</pre>
 */
public final class StartedServers implements AutoCloseable {
    private final List<AutoCloseable> started = new ArrayList<>();
    private RunDirectory runDirectory;

    /**
     * Removes the run directories named {@code prefix...} that {@code whose} left behind ({@link
     * RunDirectory#removeAbandoned}), creates this run's, says where on {@code progress}, and returns its path.
     */
    public Path runDirectory(String prefix, String whose, PrintStream progress) {
        RunDirectory.removeAbandoned(Path.of(System.getProperty("java.io.tmpdir")), prefix, whose, progress);
        runDirectory = RunDirectory.create(prefix);
        progress.println("  embedded servers' data in " + runDirectory.path());
        return runDirectory.path();
    }

    /** Stops {@code server} on {@link #close()}, before everything added earlier. Returns it. */
    public <T extends AutoCloseable> T add(T server) {
        started.add(server);
        return server;
    }

    /** Stops everything added, newest first, then deletes the run directory. Safe twice. */
    @Override
    public void close() {
        for (int i = started.size() - 1; i >= 0; i--) {
            try {
                started.get(i).close();
            } catch (Exception e) {
                // stopping an embedded server at exit: nothing left to do about a failure
            }
        }
        started.clear();
        if (runDirectory != null) {
            runDirectory.delete();
            runDirectory = null;
        }
    }
}
