package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.Checker;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.Observed;
import dev.fencing.verify.client.ConsumerMain;
import dev.fencing.verify.client.WriterMain;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs the workload once in one {@link Mode} against the servers: prepares the mode's tables and topics, starts
 * the consumer members and the writers, lets the nemesis loose for the workload time (and until every fault's
 * minimum is reached, within three times that), stops everything, waits until the consumers have consumed every
 * record, and hands the histories and the database to the checker. Not thread-safe: one run at a time.
 */
final class ModeRunner {
    /** One record in this many is sent without a token header: the fenced consumer must dead-letter it. */
    static final int UNSTAMPED_EVERY = 25;

    private static final int CONSUMER_MEMBERS = 2;
    private static final Duration WRITER_READY_WAIT = Duration.ofSeconds(90);
    private static final Duration CATCH_UP_WAIT = Duration.ofSeconds(90);
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(10);

    private final VerifySettings settings;
    private final Servers servers;
    private final String runId;
    private final Duration grantedSession;
    private final Set<FaultKind> faults;
    private final PrintStream progress;

    /**
     * @param faults the faults to inject: those asked for that these servers allow
     * @param grantedSession the session timeout ZooKeeper grants for the requested one
     */
    ModeRunner(
            VerifySettings settings,
            Servers servers,
            String runId,
            Duration grantedSession,
            Set<FaultKind> faults,
            PrintStream progress) {
        this.settings = settings;
        this.servers = servers;
        this.runId = runId;
        this.grantedSession = grantedSession;
        this.faults = faults.isEmpty() ? EnumSet.noneOf(FaultKind.class) : EnumSet.copyOf(faults);
        this.progress = progress;
    }

    RunResult run(Mode mode) throws InterruptedException {
        String label = mode.label();
        Path directory = settings.outDirectory().resolve(runId).resolve(label);
        Path historyDirectory = directory.resolve("history");
        Path logDirectory = directory.resolve("logs");
        try {
            Files.createDirectories(historyDirectory);
            Files.createDirectories(logDirectory);
        } catch (IOException e) {
            throw new VerifyException("cannot create " + directory + " (" + VerifySettings.OUT_FLAG + "): " + e, e);
        }
        String topic = "verify-" + runId + "-" + label;
        String deadLetterTopic = topic + ".dlt";
        String group = "verify-" + runId + "-" + label;
        String lockRoot = "/fencing-verify/" + runId + "/" + label;
        prepareTables(mode);
        servers.createTopic(topic, Math.min(settings.resources(), 12));
        if (mode == Mode.FENCED) {
            servers.createTopic(deadLetterTopic, 1);
        }
        progress.println("[" + label + "] tables " + mode.schema() + ".*, topic " + topic + ", lock root " + lockRoot
                + ", histories in " + historyDirectory);

        EventBoard board = new EventBoard();
        Map<String, String> environment = Map.of(WriterMain.PASSWORD_ENV, servers.jdbcPassword());
        List<String> notes = new ArrayList<>();
        Writers writers = null;
        ConsumerGroup consumers = null;
        DeadLetterRecorder recorder = null;
        FaultLog log = null;
        try {
            ConsumerGroup group1 = new ConsumerGroup(
                    member -> ChildJvm.start(
                            "consumer " + member,
                            member,
                            List.of(),
                            List.of(),
                            ConsumerMain.class,
                            List.of(
                                    "member=" + member,
                                    "mode=" + label,
                                    "kafka=" + servers.kafkaBootstrap(),
                                    "topic=" + topic,
                                    "group=" + group,
                                    "jdbcUrl=" + servers.jdbcUrl(),
                                    "jdbcUser=" + servers.jdbcUser(),
                                    "schema=" + mode.schema()),
                            environment,
                            logDirectory.resolve("consumer-" + member + ".log"),
                            board::add),
                    board,
                    CONSUMER_MEMBERS);
            consumers = group1;
            if (mode == Mode.FENCED) {
                recorder = new DeadLetterRecorder(
                        servers.kafkaBootstrap(), deadLetterTopic, servers.dataSource(), mode.schema());
                recorder.start();
            }
            progress.println("[" + label + "] starting " + CONSUMER_MEMBERS + " consumer members and "
                    + settings.clients() + " writers");
            long readyMark = board.mark();
            writers = startWriters(mode, board, environment, topic, lockRoot, historyDirectory, logDirectory);
            consumers.start();
            for (ChildJvm writer : writers.all()) {
                if (board.await(readyMark, e -> e.child().equals(writer.name()) && e.is("HEAP"), WRITER_READY_WAIT)
                        .isEmpty()) {
                    throw new VerifyException(writer.name() + " was not ready within "
                            + WRITER_READY_WAIT.toSeconds() + " s (alive: " + writer.isAlive() + "); see "
                            + logDirectory.resolve("writer-" + writer.id() + ".log"));
                }
            }
            RunResult.Heap heapAtStart = heap(board, writers, readyMark);

            long runStart = System.currentTimeMillis();
            log = new FaultLog(directory.resolve("nemesis.jsonl"), progress, label, runStart);
            Nemesis nemesis = new Nemesis(
                    new FaultSchedule(settings.seed()),
                    new FaultInjector(
                            writers,
                            consumers,
                            board,
                            log,
                            servers.ensemble().orElse(null),
                            servers.network().orElse(null),
                            servers.dataSource(),
                            grantedSession),
                    log,
                    faults,
                    runStart,
                    settings.duration(),
                    settings.duration().multipliedBy(3),
                    settings.clients());
            writers.all().forEach(w -> w.send("START"));
            nemesis.start();
            long hardEnd = runStart + settings.duration().multipliedBy(3).toMillis();
            long nextProgress = runStart + PROGRESS_EVERY.toMillis();
            while (true) {
                long now = System.currentTimeMillis();
                if (now >= hardEnd || (now >= runStart + settings.duration().toMillis() && nemesis.minimumsReached())) {
                    break;
                }
                consumers.watch().forEach(log::note);
                for (ChildJvm writer : writers.all()) {
                    if (!writer.isAlive() && notes.stream().noneMatch(n -> n.startsWith(writer.name() + " "))) {
                        String note = writer.name() + " exited (code " + writer.exitCode() + "); see its log";
                        notes.add(note);
                        log.note(note);
                    }
                }
                if (now >= nextProgress) {
                    log.note(writers.counts() + "; faults " + describe(log.countedByKind(), faults));
                    nextProgress += PROGRESS_EVERY.toMillis();
                }
                Thread.sleep(200);
            }
            nemesis.stop();
            long runEnd = System.currentTimeMillis();
            if (!nemesis.minimumsReached()) {
                String note = "not every fault reached its minimum within "
                        + Durations.format(settings.duration().multipliedBy(3))
                        + ": " + describe(log.countedByKind(), faults);
                notes.add(note);
                log.note(note);
            }
            long heapMark = board.mark();
            writers.all().forEach(w -> w.send("HEAP"));
            for (ChildJvm writer : writers.all()) {
                board.await(heapMark, e -> e.child().equals(writer.name()) && e.is("HEAP"), Duration.ofSeconds(20));
            }
            RunResult.Heap heapAtEnd = heap(board, writers, heapMark);
            log.note("stopping the writers; " + writers.counts());
            writers.all().forEach(w -> w.send("STOP"));
            for (ChildJvm writer : writers.all()) {
                if (!writer.awaitExit(Duration.ofSeconds(60))) {
                    notes.add(writer.name() + " did not stop within 60 s and was killed");
                    writer.close();
                }
            }
            log.note("waiting for the consumers to consume every record");
            if (!awaitConsumed(mode, topic, group, consumers, log)) {
                String note = "the consumers had not consumed every record after " + CATCH_UP_WAIT.toSeconds() + " s";
                notes.add(note);
                log.note(note);
            }
            notes.addAll(consumers.failures());
            consumers.stop();
            if (recorder != null) {
                recorder.drainAndStop(Duration.ofSeconds(60));
                recorder = null;
            }
            History history = History.read(historyDirectory);
            Observed observed;
            try (Connection connection = servers.dataSource().getConnection()) {
                observed = Observed.read(connection, mode.schema());
            } catch (SQLException e) {
                throw new VerifyException("cannot read the run's tables: " + e.getMessage(), e);
            }
            CheckResult check = Checker.check(history, observed, Checker.Options.DEFAULT);
            log.note("checked: " + check.operations() + " operations, "
                    + check.violations().size() + " violations");
            if (servers.external() && !settings.keep()) {
                servers.deleteTopics(mode == Mode.FENCED ? List.of(topic, deadLetterTopic) : List.of(topic));
                servers.deleteTree(lockRoot);
            }
            return new RunResult(
                    mode,
                    settings.seed(),
                    check,
                    history,
                    log.faults(),
                    log.countedByKind(),
                    runStart,
                    runEnd,
                    heapAtStart,
                    heapAtEnd,
                    List.copyOf(notes),
                    directory);
        } finally {
            if (writers != null) {
                writers.close();
            }
            if (consumers != null) {
                consumers.close();
            }
            if (log != null) {
                log.close();
            }
        }
    }

    private Writers startWriters(
            Mode mode,
            EventBoard board,
            Map<String, String> environment,
            String topic,
            String lockRoot,
            Path historyDirectory,
            Path logDirectory) {
        List<ChildJvm> children = new ArrayList<>();
        Writers[] writers = new Writers[1];
        List<String> options = new ArrayList<>(List.of("-Dzookeeper.sasl.client=false"));
        if (servers.network().isPresent()) {
            // Inside a namespace a name lookup waits for the resolver's timeout (10 s measured: its queries go
            // to the host, which forwards nothing), and the ZooKeeper and Kafka clients look names up on every
            // connection. A hosts file answers every lookup at once, from the file.
            Path hosts = historyDirectory.resolveSibling("hosts");
            try {
                Files.writeString(hosts, "127.0.0.1 localhost\n::1 localhost\n");
            } catch (IOException e) {
                throw new VerifyException("cannot write " + hosts + ": " + e.getMessage(), e);
            }
            options.add("-Djdk.net.hosts.file=" + hosts);
        }
        for (int id = 1; id <= settings.clients(); id++) {
            int client = id;
            List<String> prefix = servers.network()
                    .map(n -> n.client(client).command(List.of()))
                    .orElse(List.of());
            children.add(ChildJvm.start(
                    "writer " + id,
                    id,
                    prefix,
                    options,
                    WriterMain.class,
                    List.of(
                            "client=" + id,
                            "mode=" + mode.label(),
                            "zookeeper=" + servers.zookeeperConnect(),
                            "sessionTimeoutMs=" + settings.sessionTimeout().toMillis(),
                            "lockRoot=" + lockRoot,
                            "jdbcUrl=" + servers.clientJdbcUrl(),
                            "jdbcUser=" + servers.jdbcUser(),
                            "schema=" + mode.schema(),
                            "kafka=" + servers.kafkaBootstrap(),
                            "topic=" + topic,
                            "resources=" + settings.resources(),
                            "seed=" + settings.seed(),
                            "history=" + historyDirectory.resolve("client-" + id + ".jsonl"),
                            "unstampedEvery=" + UNSTAMPED_EVERY),
                    environment,
                    logDirectory.resolve("writer-" + id + ".log"),
                    event -> {
                        board.add(event);
                        if (writers[0] != null) {
                            writers[0].onEvent(event);
                        }
                    }));
        }
        writers[0] = new Writers(children);
        return writers[0];
    }

    /** The coordinator's heap after a collection, and the writers' last HEAP reports since {@code mark}. */
    private static RunResult.Heap heap(EventBoard board, Writers writers, long mark) {
        System.gc();
        long coordinator =
                ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long max = 0;
        long total = 0;
        for (ChildJvm writer : writers.all()) {
            long bytes = board.find(mark, e -> e.child().equals(writer.name()) && e.is("HEAP"))
                    .map(e -> e.number(0))
                    .orElse(0L);
            max = Math.max(max, bytes);
            total += bytes;
        }
        return new RunResult.Heap(coordinator, max, total);
    }

    private void prepareTables(Mode mode) {
        String schema = mode.schema();
        try (Connection connection = servers.dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            statement.execute("CREATE SCHEMA " + schema);
            statement.execute("CREATE TABLE " + schema + ".resources (resource TEXT PRIMARY KEY,"
                    + " ids BIGINT[] NOT NULL DEFAULT '{}', last_op BIGINT)");
            for (int i = 1; i <= settings.resources(); i++) {
                statement.execute("INSERT INTO " + schema + ".resources (resource) VALUES ('r" + i + "')");
            }
            if (mode == Mode.FENCED) {
                statement.execute("SELECT fencing.protect_table('" + schema + ".resources')");
            }
            statement.execute(
                    "CREATE TABLE " + schema + ".applied (record_key TEXT PRIMARY KEY," + " ids BIGINT[] NOT NULL)");
            statement.execute("CREATE TABLE " + schema + ".dead_letters (origin_partition INT NOT NULL,"
                    + " origin_offset BIGINT NOT NULL, record_key TEXT, op BIGINT, reason TEXT NOT NULL, detail TEXT,"
                    + " PRIMARY KEY (origin_partition, origin_offset))");
        } catch (SQLException e) {
            throw new VerifyException("cannot create the tables of " + schema + ": " + e.getMessage(), e);
        }
    }

    /**
     * Waits until the group has consumed every record of the topic: for the fenced run, the watermark store's
     * offsets (its record of progress); for the control run, the offsets committed to Kafka. Starts again any
     * base member that stops on its own meanwhile.
     */
    private boolean awaitConsumed(Mode mode, String topic, String group, ConsumerGroup consumers, FaultLog log)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + CATCH_UP_WAIT.toMillis();
        try (Admin admin = servers.admin()) {
            while (System.currentTimeMillis() < deadline) {
                consumers.watch().forEach(log::note);
                Map<TopicPartition, Long> end = endOffsets(admin, topic);
                Map<Integer, Long> consumed =
                        mode == Mode.FENCED ? storeOffsets(group, topic) : kafkaOffsets(admin, group);
                boolean caughtUp = end.entrySet().stream()
                        .allMatch(e -> consumed.getOrDefault(e.getKey().partition(), 0L) >= e.getValue());
                if (caughtUp) {
                    return true;
                }
                Thread.sleep(500);
            }
        }
        return false;
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) {
        try {
            int partitions = admin.describeTopics(List.of(topic))
                    .allTopicNames()
                    .get(10, TimeUnit.SECONDS)
                    .get(topic)
                    .partitions()
                    .size();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            return admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet().stream()
                    .collect(Collectors.toMap(
                            Map.Entry::getKey, e -> e.getValue().offset()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerifyException("interrupted while reading the end offsets of " + topic, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new VerifyException("cannot read the end offsets of " + topic + ": " + e.getMessage(), e);
        }
    }

    private static Map<Integer, Long> kafkaOffsets(Admin admin, String group) {
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            Map<Integer, Long> offsets = new HashMap<>();
            committed.forEach((partition, offset) -> {
                if (offset != null) {
                    offsets.put(partition.partition(), offset.offset());
                }
            });
            return offsets;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerifyException("interrupted while reading the offsets of group " + group, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new VerifyException("cannot read the offsets of group " + group + ": " + e.getMessage(), e);
        }
    }

    private Map<Integer, Long> storeOffsets(String group, String topic) {
        Map<Integer, Long> offsets = new HashMap<>();
        try (Connection connection = servers.dataSource().getConnection();
                PreparedStatement query = connection.prepareStatement("SELECT kafka_partition, next_offset"
                        + " FROM fencing.kafka_offset WHERE consumer_group = ? AND topic = ?")) {
            query.setString(1, group);
            query.setString(2, topic);
            try (ResultSet rows = query.executeQuery()) {
                while (rows.next()) {
                    offsets.put(rows.getInt(1), rows.getLong(2));
                }
            }
        } catch (SQLException e) {
            throw new VerifyException("cannot read the consumer offsets in fencing.kafka_offset: " + e.getMessage(), e);
        }
        return offsets;
    }

    /** "pause 3, partition 1": the counts of the kinds in {@code kinds}. */
    static String describe(Map<FaultKind, Integer> counted, Set<FaultKind> kinds) {
        return counted.entrySet().stream()
                .filter(e -> kinds.contains(e.getKey()))
                .map(e -> e.getKey().flagName() + " " + e.getValue())
                .collect(Collectors.joining(", "))
                .toLowerCase(Locale.ROOT);
    }
}
