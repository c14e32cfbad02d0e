package dev.fencing.demo;

import dev.fencing.harness.ChildFleet;
import dev.fencing.harness.ChildJvm;
import dev.fencing.harness.Durations;
import dev.fencing.harness.KafkaTopics;
import dev.fencing.harness.ZooKeeperAccess;
import dev.fencing.kafka.FencedConsumerConfig;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.jdbi.v3.core.Jdbi;

/**
 * Runs the workload once in one {@link Mode}: fresh tables, topic and lock paths; a projection consumer;
 * the worker JVMs and the pause schedule; then the end-of-run check against the database. Not thread-safe.
 *
 * <pre>{@code
 * RunResult unfenced = new ScenarioRunner(settings, clusters, logDirectory, System.out).run(Mode.UNFENCED);
 * }</pre>
 */
final class ScenarioRunner {
    private static final Duration WORKER_START_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration WORKER_EXIT_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration PROJECTION_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(5);
    private static final int PARTITIONS = 3;

    private final DemoSettings settings;
    private final Clusters clusters;
    private final Path logDirectory;
    private final PrintStream progress;
    private final Jdbi jdbi;

    ScenarioRunner(DemoSettings settings, Clusters clusters, Path logDirectory, PrintStream progress) {
        this.settings = settings;
        this.clusters = clusters;
        this.logDirectory = logDirectory;
        this.progress = progress;
        this.jdbi = Jdbi.create(clusters.dataSource());
        InventoryDatabase.migrate(clusters.dataSource());
    }

    /** Warms the servers up for {@code length}, so the first run is not measured on cold servers. */
    void warmUp(Duration length) {
        progress.printf("warming the servers up for %s%n", Durations.format(length));
        List<String> created = Warmup.run(clusters, jdbi, length);
        if (settings.keep()) {
            return;
        }
        try {
            if (settings.kafkaBootstrap() != null) {
                KafkaTopics.delete(clusters.kafkaBootstrap(), List.of(created.get(0)));
            }
            if (settings.zookeeperConnect() != null) {
                ZooKeeperAccess.deleteLockTree(clusters.zookeeperConnect(), created.get(1));
            }
        } catch (RuntimeException e) {
            progress.println("could not remove the warm-up's topic " + created.get(0) + " or lock nodes under "
                    + created.get(1) + ": " + e.getMessage());
        }
    }

    /**
     * @throws DemoException if a worker fails or does not start, or the projection does not catch up
     */
    RunResult run(Mode mode) {
        String label = mode.label();
        String tag = Long.toString(System.currentTimeMillis(), 36);
        String topic = "demo-inventory-" + label + "-" + tag;
        String lockRoot = "/fencing-demo/" + tag + "/" + label;
        InventoryDatabase database = new InventoryDatabase(jdbi, mode);
        database.prepare(settings.skus(), settings.initialStock());
        // Both topics exist before anyone produces or consumes: the embedded broker does not create topics
        // on demand, and the fenced consumer sends records it cannot read to <topic>.dlt.
        String deadLetters = topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX;
        KafkaTopics.create(clusters.kafkaBootstrap(), topic, PARTITIONS);
        KafkaTopics.create(clusters.kafkaBootstrap(), deadLetters, 1);
        try {
            return run(mode, label, topic, lockRoot, database);
        } finally {
            removeLeftovers(topic, deadLetters, lockRoot);
        }
    }

    /** Against external servers and without --keep: removes the topics, lock nodes and watermarks of a run. */
    private void removeLeftovers(String topic, String deadLetters, String lockRoot) {
        if (settings.keep()) {
            return;
        }
        try {
            if (settings.kafkaBootstrap() != null) {
                KafkaTopics.delete(clusters.kafkaBootstrap(), List.of(topic, deadLetters));
            }
            if (settings.zookeeperConnect() != null) {
                ZooKeeperAccess.deleteLockTree(
                        clusters.zookeeperConnect(), lockRoot.substring(0, lockRoot.lastIndexOf('/')));
            }
            if (settings.jdbcUrl() != null) {
                String group = StockProjection.groupOf(topic);
                jdbi.useHandle(handle -> {
                    handle.execute("DELETE FROM fencing.kafka_watermark WHERE consumer_group = ?", group);
                    handle.execute("DELETE FROM fencing.kafka_offset WHERE consumer_group = ?", group);
                    handle.execute("DELETE FROM fencing.kafka_topic WHERE consumer_group = ?", group);
                });
            }
        } catch (RuntimeException e) {
            progress.println("could not remove what the run created (" + e.getMessage() + "); remove topic " + topic
                    + ", its .dlt and lock nodes under " + lockRoot + " by hand");
        }
    }

    private RunResult run(Mode mode, String label, String topic, String lockRoot, InventoryDatabase database) {

        RunRecorder recorder = new RunRecorder();
        AtomicReference<PauseSchedule> pauses = new AtomicReference<>();
        ChildFleet workers = null;
        progress.printf("[%s] starting %d worker JVMs%n", label, settings.workers());
        try (StockProjection projection = StockProjection.start(mode, clusters.kafkaBootstrap(), topic, jdbi)) {
            workers = ChildFleet.start(
                    settings.workers(),
                    id -> ChildJvm.start(
                            "worker " + id,
                            id,
                            List.of(),
                            List.of("-Xmx256m"),
                            WorkerMain.class.getName(),
                            workerArguments(id, mode, lockRoot, topic),
                            Map.of(InventoryDemo.JDBC_PASSWORD_ENV, clusters.jdbcPassword()),
                            logDirectory.resolve("worker-" + id + "-" + label + ".log"),
                            line -> WorkerEvent.parse(line, id).ifPresent(event -> {
                                recorder.add(event);
                                PauseSchedule current = pauses.get();
                                if (current != null) {
                                    current.onEvent(event);
                                }
                            })));
            pauses.set(new PauseSchedule(
                    workers.all(), recorder, settings.pause(), settings.pauseEvery(), settings.seed(), progress, mode));
            awaitReady(recorder, workers, label);
            for (WorkerEvent ready : recorder.events()) {
                if (ready.kind() == WorkerEvent.Kind.READY) {
                    SessionTimeouts.requirePauseLonger(
                            settings.pause(), settings.sessionTimeout(), Duration.ofMillis(ready.a()));
                }
            }

            long start = System.currentTimeMillis();
            workers.send("START");
            pauses.get().start();
            progress.printf(
                    "[%s] running for up to %s (or until sold out), a pause of %s+ every %s%n",
                    label,
                    Durations.format(settings.duration()),
                    Durations.format(settings.pause()),
                    Durations.format(settings.pauseEvery()));
            String ending = workload(database, recorder, pauses.get(), workers, start, label);
            pauses.get().stop();
            for (ChildJvm late : workers.stop(WORKER_EXIT_TIMEOUT)) {
                progress.printf(
                        "[%s] worker %d did not stop within %s and was killed%n",
                        label, late.id(), WORKER_EXIT_TIMEOUT);
            }
            long end = System.currentTimeMillis();
            progress.printf("[%s] workload ended (%s) after %.1fs%n", label, ending, (end - start) / 1000.0);

            projection.awaitCaughtUp(recorder.count(WorkerEvent.Kind.PUBLISHED), PROJECTION_TIMEOUT);
            long rejected = recorder.count(WorkerEvent.Kind.REJECTED);
            InventorySnapshot snapshot = new InventoryAudit(jdbi, mode).snapshot();
            InvariantChecker.Landings landings = InvariantChecker.confirmLandings(snapshot, recorder.pauses());
            InvariantChecker.InvariantReport report = new InvariantChecker()
                    .check(snapshot, projection.stock(), projection.staleApplied())
                    .withViolations(landings.violations())
                    .withViolations(InvariantChecker.crossCheck(
                            mode, landings.pauses(), projection.dropped(), recorder.events()));
            for (String violation : report.violations()) {
                progress.printf("[%s] invariant broken: %s%n", label, violation);
            }
            return new RunResult(
                    mode,
                    report,
                    rejected,
                    projection.dropped(),
                    recorder.count(WorkerEvent.Kind.RELEASED),
                    (end - start) / 1000.0,
                    settings.workers(),
                    start,
                    end,
                    recorder.events(),
                    landings.pauses());
        } finally {
            PauseSchedule current = pauses.get();
            if (current != null) {
                current.stop();
            }
            if (workers != null) {
                workers.close();
            }
        }
    }

    /**
     * Runs until the duration is up, or everything is sold out with no pause in progress. Returns why it ended. A
     * run whose duration is up before {@code --min-landed-pauses} pauses landed (a slow machine: workers that
     * reach their pause points late) goes on until they have, for at most {@link #extended} in all (not at all
     * if {@code --pause-every} is longer than that), and the verdict judges it as before.
     */
    private String workload(
            InventoryDatabase database,
            RunRecorder recorder,
            PauseSchedule pauses,
            ChildFleet workers,
            long start,
            String label) {
        long deadline = start + settings.duration().toMillis();
        // no longer than a run whose pauses come too seldom to land in the time it could go on
        long hardDeadline = settings.pauseEvery().compareTo(extended(settings.duration())) < 0
                ? start + extended(settings.duration()).toMillis()
                : deadline;
        boolean extending = false;
        long nextProgress = start + PROGRESS_EVERY.toMillis();
        while (true) {
            sleep(Duration.ofMillis(200));
            failIfBroken(recorder, workers, label);
            long now = System.currentTimeMillis();
            int unitsLeft = database.unitsLeft();
            if (now >= nextProgress) {
                nextProgress += PROGRESS_EVERY.toMillis();
                progress.printf(
                        Locale.ROOT,
                        "[%s] %3.0fs  orders accepted %d, stale writes rejected %d, pauses %d, units left %d%n",
                        label,
                        (now - start) / 1000.0,
                        recorder.count(WorkerEvent.Kind.WRITTEN),
                        recorder.count(WorkerEvent.Kind.REJECTED),
                        recorder.pauses().size(),
                        unitsLeft);
            }
            if (now >= deadline) {
                long landed = recorder.pauses().stream()
                        .filter(RunRecorder.Pause::landed)
                        .count();
                if (landed >= settings.minLandedPauses()) {
                    return extending ? "duration reached, extended until enough pauses landed" : "duration reached";
                }
                if (now >= hardDeadline) {
                    return "duration reached, extended to " + Durations.format(extended(settings.duration())) + " with "
                            + landed + " of " + settings.minLandedPauses() + " pauses landed";
                }
                if (!extending) {
                    extending = true;
                    progress.printf(
                            "[%s] %d of %d pauses landed: going on for at most %s more%n",
                            label,
                            landed,
                            settings.minLandedPauses(),
                            Durations.format(Duration.ofMillis(hardDeadline - now)));
                }
            }
            if (unitsLeft == 0 && !pauses.pausing()) {
                return "sold out";
            }
        }
    }

    /** The longest a run goes on to land its minimum of pauses: twice its duration, and at least 30 s more. */
    static Duration extended(Duration duration) {
        Duration twice = duration.multipliedBy(2);
        Duration plus = duration.plusSeconds(30);
        return twice.compareTo(plus) > 0 ? twice : plus;
    }

    private void awaitReady(RunRecorder recorder, ChildFleet workers, String label) {
        long deadline = System.nanoTime() + WORKER_START_TIMEOUT.toNanos();
        while (recorder.count(WorkerEvent.Kind.READY) < workers.size()) {
            failIfBroken(recorder, workers, label);
            if (System.nanoTime() > deadline) {
                throw new DemoException("only " + recorder.count(WorkerEvent.Kind.READY) + " of " + workers.size()
                        + " workers were ready within " + WORKER_START_TIMEOUT + "; see the logs in " + logDirectory);
            }
            sleep(Duration.ofMillis(100));
        }
    }

    private void failIfBroken(RunRecorder recorder, ChildFleet workers, String label) {
        if (recorder.count(WorkerEvent.Kind.FAILED) > 0) {
            WorkerEvent failed = recorder.events().stream()
                    .filter(e -> e.kind() == WorkerEvent.Kind.FAILED)
                    .findFirst()
                    .orElseThrow();
            throw new DemoException("[" + label + "] worker " + failed.worker() + " failed: " + failed.sku() + "; see "
                    + logDirectory.resolve("worker-" + failed.worker() + "-" + label + ".log"));
        }
        List<ChildJvm> exited = workers.exited();
        if (!exited.isEmpty()) {
            ChildJvm worker = exited.get(0);
            throw new DemoException("[" + label + "] worker " + worker.id() + " (pid " + worker.pid()
                    + ") exited unexpectedly; see "
                    + logDirectory.resolve("worker-" + worker.id() + "-" + label + ".log"));
        }
    }

    private List<String> workerArguments(int id, Mode mode, String lockRoot, String topic) {
        return List.of(
                "worker=" + id,
                "mode=" + mode.label(),
                "zookeeper=" + clusters.zookeeperConnect(),
                "sessionTimeoutMs=" + settings.sessionTimeout().toMillis(),
                "lockRoot=" + lockRoot,
                "jdbcUrl=" + clusters.jdbcUrl(),
                "jdbcUser=" + clusters.jdbcUser(),
                "kafka=" + clusters.kafkaBootstrap(),
                "topic=" + topic,
                "skus=" + settings.skus(),
                "seed=" + settings.seed(),
                "workMs=" + settings.work().toMillis());
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted", e);
        }
    }
}
