package dev.fencing.harness;

import dev.fencing.testsupport.EmbeddedKafka;
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

    /**
     * The Kafka cluster a run uses: the one at {@code given} (its bootstrap servers, checked to answer), or, when
     * {@code given} is null, an embedded broker listening on {@code host} with its log in the run directory
     * ({@link #runDirectory} first), stopped on {@link #close()}. Says which on {@code progress}; returns the
     * bootstrap servers.
     *
     * @param flag the flag that names a given cluster, for messages
     * @throws HarnessException naming the flag and the address when a given cluster does not answer
     */
    public String kafka(String given, String flag, String host, PrintStream progress) {
        if (given != null) {
            KafkaTopics.requireReachable(given, flag);
            progress.println("  Kafka at " + given);
            return given;
        }
        EmbeddedKafka kafka = add(EmbeddedKafka.builder()
                .logDirectoryParent(runDirectory.path())
                .host(host)
                .build());
        progress.println("  embedded Kafka at " + kafka.bootstrapServers());
        return kafka.bootstrapServers();
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
