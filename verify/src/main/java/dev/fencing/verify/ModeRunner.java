package dev.fencing.verify;

import dev.fencing.harness.ChildFleet;
import dev.fencing.harness.ChildJvm;
import dev.fencing.harness.Durations;
import dev.fencing.harness.EventBoard;
import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.Checker;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.Observed;
import dev.fencing.verify.client.ConsumerMain;
import dev.fencing.verify.client.WriterMain;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Runs the workload once in one {@link Mode} against the servers: prepares the mode's tables and topics, starts
 * the consumer members and the writers, lets the nemesis loose for the workload time (and until every fault's
 * minimum is reached, within {@link VerifySettings#hardLimit()}), stops everything, waits until the consumers have consumed every
 * record, and hands the histories and the database to the checker. For a resource other than the chain its {@link
 * Workload} prepares, tells the writers where to write and checks, and there are no tables, topic or consumers.
 * Not thread-safe: one run at a time.
 */
final class ModeRunner {
    /** One record in this many is sent without a token header: the fenced consumer must dead-letter it. */
    static final int UNSTAMPED_EVERY = 25;

    private static final int CONSUMER_MEMBERS = 2;
    /** How often the run's processes are sampled for growth, besides at its start and end. */
    static final Duration SAMPLE_EVERY = Duration.ofMinutes(10);
    /** How long a sample waits for the children's heap reports, all together. */
    private static final Duration SAMPLE_WAIT = Duration.ofSeconds(15);

    /**
     * The children's latest events the coordinator holds, for faults to wait on: a long run's memory stays flat, and
     * the histories, not these events, are what the checker reads.
     */
    private static final int EVENTS_HELD = 20_000;

    private static final String CHILD_HEAP = "-Xmx128m";
    private static final Duration WRITER_READY_WAIT = Duration.ofSeconds(90);
    private static final Duration CATCH_UP_WAIT = Duration.ofSeconds(90);
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(10);

    private final VerifySettings settings;
    private final Servers servers;
    private final String runId;
    private final Duration grantedSession;
    private final Set<FaultKind> faults;
    private final PrintStream progress;
    /** The resource's part of the run, or null for the chain, which this class runs itself. */
    private final Workload workload;

    /**
     * @param faults the faults to inject: those asked for that these servers allow
     * @param grantedSession the session timeout ZooKeeper grants for the requested one, or the writers' etcd lease
     *     TTL
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
        this.workload = switch (settings.resource()) {
            case POSTGRES -> null;
            case REDIS -> new RedisWorkload(servers, runId, settings.resources());
            case ELECTION -> new ElectionWorkload(servers, settings.resources(), settings.clients());
            case RWLOCK -> new RwLockWorkload(servers, settings.resources());
        };
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
        boolean chain = workload == null;
        if (chain) {
            RunTables.prepare(servers.dataSource(), mode, settings.resources());
            servers.createTopic(topic, Math.min(settings.resources(), 12));
            if (mode == Mode.FENCED) {
                servers.createTopic(deadLetterTopic, 1);
            }
            progress.println("[" + label + "] tables " + mode.schema() + ".*, topic " + topic + ", lock root "
                    + lockRoot + ", histories in " + historyDirectory);
        } else {
            workload.prepare(mode);
            progress.println("[" + label + "] " + settings.resource().flagName() + " resource, lock root " + lockRoot
                    + ", histories in " + historyDirectory);
        }

        EventBoard<ClientEvent> board = new EventBoard<>(EVENTS_HELD);
        Map<String, String> environment =
                settings.resource().postgres() ? Map.of(WriterMain.PASSWORD_ENV, servers.jdbcPassword()) : Map.of();
        List<String> notes = new ArrayList<>();
        Writers writers = null;
        ConsumerGroup consumers = null;
        DeadLetterRecorder recorder = null;
        FaultLog log = null;
        try {
            consumers = !chain
                    ? null
                    : new ConsumerGroup(
                            member -> ChildJvm.start(
                                    "consumer " + member,
                                    member,
                                    List.of(),
                                    List.of(CHILD_HEAP),
                                    ConsumerMain.class.getName(),
                                    List.of(
                                            "member=" + member,
                                            "mode=" + label,
                                            "kafka=" + servers.kafkaBootstrap(),
                                            "topic=" + topic,
                                            "group=" + group,
                                            "jdbcUrl=" + servers.jdbcUrl(),
                                            "jdbcUser=" + servers.jdbcUser(),
                                            "schema=" + mode.schema(),
                                            "concurrency=" + settings.consumerConcurrency()),
                                    environment,
                                    logDirectory.resolve("consumer-" + member + ".log"),
                                    events("consumer " + member, member, board::add)),
                            board,
                            CONSUMER_MEMBERS);
            if (chain && mode == Mode.FENCED) {
                recorder = new DeadLetterRecorder(
                        servers.kafkaBootstrap(), deadLetterTopic, servers.dataSource(), mode.schema());
                recorder.start();
            }
            progress.println("[" + label + "] starting "
                    + (chain
                            ? CONSUMER_MEMBERS + " consumer members ("
                                    + (settings.consumerConcurrency() == 1
                                            ? "serial"
                                            : "key-parallel at " + settings.consumerConcurrency())
                                    + ") and "
                            : "")
                    + settings.clients() + " writers");
            long readyMark = board.mark();
            writers = startWriters(mode, board, environment, topic, lockRoot, historyDirectory, logDirectory);
            if (consumers != null) {
                consumers.start();
            }
            for (ChildJvm writer : writers.all()) {
                if (board.await(readyMark, e -> e.child().equals(writer.name()) && e.is("HEAP"), WRITER_READY_WAIT)
                        .isEmpty()) {
                    throw new VerifyException(writer.name() + " was not ready within "
                            + WRITER_READY_WAIT.toSeconds() + " s (alive: " + writer.isAlive() + "); see "
                            + logDirectory.resolve("writer-" + writer.id() + ".log"));
                }
            }
            List<ResourceSample> samples = new ArrayList<>();
            samples.add(sample(board, writers, consumers));

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
                            servers.etcd().orElse(null),
                            servers.network().orElse(null),
                            chain ? servers.dataSource() : null,
                            grantedSession,
                            settings.resource()),
                    log,
                    faults,
                    runStart,
                    settings.duration(),
                    settings.hardLimit(),
                    settings.clients());
            writers.fleet().send("START");
            nemesis.start();
            long hardEnd = runStart + settings.hardLimit().toMillis();
            long nextProgress = runStart + PROGRESS_EVERY.toMillis();
            long nextSample = runStart + SAMPLE_EVERY.toMillis();
            while (true) {
                long now = System.currentTimeMillis();
                if (now >= hardEnd || (now >= runStart + settings.duration().toMillis() && nemesis.minimumsReached())) {
                    break;
                }
                if (consumers != null) {
                    consumers.watch().forEach(log::note);
                }
                for (ChildJvm writer : writers.all()) {
                    if (!writer.isAlive() && notes.stream().noneMatch(n -> n.startsWith(writer.name() + " "))) {
                        String note = writer.name() + " exited (code " + writer.exitCode() + "); see its log";
                        notes.add(note);
                        log.note(note);
                    }
                }
                if (now >= nextSample) {
                    ResourceSample taken = sample(board, writers, consumers);
                    samples.add(taken);
                    // each sample in the run's log, for a long run's table (the summary shows the first and last)
                    log.note("resources: " + taken.describe());
                    nextSample += SAMPLE_EVERY.toMillis();
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
                        + Durations.format(settings.hardLimit())
                        + ": " + describe(log.countedByKind(), faults) + " (missing: "
                        + missing(log.countedByKind(), faults) + ")";
                notes.add(note);
                log.note(note);
            }
            Optional<String> noHolderFault = holderFaultMissing(log.countedByKind());
            if (noHolderFault.isPresent()) {
                notes.add(noHolderFault.get());
                log.note(noHolderFault.get());
            }
            samples.add(sample(board, writers, consumers));
            Optional<String> grown = ResourceSample.unboundedGrowth(samples);
            if (grown.isPresent()) {
                notes.add(grown.get());
                log.note(grown.get());
            }
            log.note("stopping the writers; " + writers.counts());
            List<ChildJvm> killed = writers.fleet().stop(Duration.ofSeconds(60));
            for (ChildJvm late : killed) {
                notes.add(late.name() + " did not stop within 60 s and was killed");
            }
            if (consumers != null) {
                log.note("waiting for the consumers to consume every record");
                if (!ConsumedOffsets.awaitConsumed(servers, mode, topic, group, consumers, log, CATCH_UP_WAIT)) {
                    String note =
                            "the consumers had not consumed every record after " + CATCH_UP_WAIT.toSeconds() + " s";
                    notes.add(note);
                    log.note(note);
                }
                notes.addAll(consumers.failures());
                consumers.stop();
            }
            if (recorder != null) {
                recorder.drainAndStop(Duration.ofSeconds(60));
                recorder = null;
            }
            History history = History.read(historyDirectory);
            for (String torn : history.tornLines()) {
                notes.add(torn);
                log.note(torn);
            }
            if (killed.isEmpty() && writers.all().stream().allMatch(writer -> writer.exitCode() == 0)) {
                // a writer that stops on its own finishes its operation first: a completion missing then was lost
                for (String unfinished : history.unfinished()) {
                    String note = unfinished + ", though every writer stopped on its own: its completion line was lost";
                    notes.add(note);
                    log.note(note);
                }
            }
            CheckResult check = chain ? checkChain(mode, history) : workload.check(mode, history);
            log.note("checked: " + check.operations() + " operations, "
                    + check.violations().size() + " violations");
            if (servers.external() && !settings.keep()) {
                if (chain) {
                    servers.deleteTopics(mode == Mode.FENCED ? List.of(topic, deadLetterTopic) : List.of(topic));
                } else {
                    workload.remove(mode);
                }
                if (settings.locks() == LockService.ZOOKEEPER) {
                    servers.deleteTree(lockRoot); // an embedded etcd cluster goes away whole
                }
            }
            return new RunResult(
                    mode,
                    settings.resource(),
                    settings.seed(),
                    check,
                    history,
                    log.faults(),
                    log.countedByKind(),
                    runStart,
                    runEnd,
                    List.copyOf(samples),
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

    /** Checks the chain's histories against its tables. */
    private CheckResult checkChain(Mode mode, History history) {
        Observed observed;
        try (Connection connection = servers.dataSource().getConnection()) {
            observed = Observed.read(connection, mode.schema());
        } catch (SQLException e) {
            throw new VerifyException("cannot read the run's tables: " + e.getMessage(), e);
        }
        return Checker.check(history, observed, Checker.Options.DEFAULT);
    }

    private Writers startWriters(
            Mode mode,
            EventBoard<ClientEvent> board,
            Map<String, String> environment,
            String topic,
            String lockRoot,
            Path historyDirectory,
            Path logDirectory) {
        Writers[] writers = new Writers[1];
        List<String> options = new ArrayList<>(List.of(CHILD_HEAP, "-Dzookeeper.sasl.client=false"));
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
        List<String> resourceArguments = workload != null
                ? workload.writerArguments(mode)
                : List.of(
                        "jdbcUrl=" + servers.clientJdbcUrl(),
                        "jdbcUser=" + servers.jdbcUser(),
                        "schema=" + mode.schema(),
                        "kafka=" + servers.kafkaBootstrap(),
                        "topic=" + topic,
                        "unstampedEvery=" + UNSTAMPED_EVERY);
        ChildFleet children = ChildFleet.start(settings.clients(), id -> {
            List<String> arguments = new ArrayList<>(List.of(
                    "client=" + id,
                    "mode=" + mode.label(),
                    "resource=" + settings.resource().flagName(),
                    "locks=" + settings.locks().flagName(),
                    settings.locks() == LockService.ETCD
                            ? "etcd="
                                    + String.join(
                                            ",", servers.etcd().orElseThrow().endpoints())
                            : "zookeeper=" + servers.zookeeperConnect(),
                    "sessionTimeoutMs=" + settings.sessionTimeout().toMillis(),
                    "lockRoot=" + lockRoot,
                    "resources=" + settings.resources(),
                    "seed=" + settings.seed(),
                    "history=" + historyDirectory.resolve("client-" + id + ".jsonl")));
            arguments.addAll(resourceArguments);
            List<String> prefix =
                    servers.network().map(n -> n.client(id).command(List.of())).orElse(List.of());
            return ChildJvm.start(
                    "writer " + id,
                    id,
                    prefix,
                    options,
                    WriterMain.class.getName(),
                    arguments,
                    environment,
                    logDirectory.resolve("writer-" + id + ".log"),
                    events("writer " + id, id, event -> {
                        board.add(event);
                        if (writers[0] != null) {
                            writers[0].onEvent(event);
                        }
                    }));
        });
        writers[0] = new Writers(children, Writers.groups(settings));
        return writers[0];
    }

    /**
     * Samples every process of the run: the coordinator, and each writer and consumer member that is alive (asked for
     * its heap after a collection; one that does not answer in time, a frozen writer, counts its descriptors and
     * threads only).
     */
    private static ResourceSample sample(EventBoard<ClientEvent> board, Writers writers, ConsumerGroup consumers)
            throws InterruptedException {
        long mark = board.mark();
        List<ChildJvm> writerJvms = writers.all();
        List<ChildJvm> consumerJvms = consumers == null ? List.of() : consumers.members();
        writerJvms.forEach(w -> w.send("HEAP"));
        consumerJvms.forEach(c -> c.send("HEAP"));
        long at = System.currentTimeMillis();
        ResourceUse coordinator = ResourceUse.self();
        long deadline = System.nanoTime() + SAMPLE_WAIT.toNanos();
        return new ResourceSample(
                at,
                coordinator,
                largest(board, mark, writerJvms, deadline),
                largest(board, mark, consumerJvms, deadline));
    }

    private static ResourceUse largest(EventBoard<ClientEvent> board, long mark, List<ChildJvm> jvms, long deadline)
            throws InterruptedException {
        ResourceUse largest = ResourceUse.NONE;
        for (ChildJvm jvm : jvms) {
            if (!jvm.isAlive()) {
                continue;
            }
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            long heap = board.await(mark, e -> e.child().equals(jvm.name()) && e.is("HEAP"), left)
                    .map(e -> e.number(0))
                    .orElse(0L);
            largest = largest.max(ResourceUse.of(jvm.pid(), heap));
        }
        return largest;
    }

    /**
     * Why a run proves nothing, if it does, whatever faults were asked for: in an election run no leader was paused
     * or partitioned past its session (neither fault counted), so no deposed leader ever wrote; in a read/write-lock
     * run no reader was paused between its read and its return while a writer wrote, so no read could be stale.
     * Empty for the other resources, whose minimums say enough.
     */
    private Optional<String> holderFaultMissing(Map<FaultKind, Integer> counted) {
        if (settings.resource() == Resource.ELECTION
                && counted.get(FaultKind.PAUSE) + counted.get(FaultKind.PARTITION) == 0) {
            return Optional.of("no leader was paused or partitioned past its session (pause and partition"
                    + " faults: none counted), so no deposed leader wrote and the election run proves nothing");
        }
        if (settings.resource() == Resource.RWLOCK && counted.get(FaultKind.READ_PAUSE) == 0) {
            return Optional.of("no reader was paused between its read and its return while a writer wrote"
                    + " (read-pause faults: none counted), so no read could be stale and the rwlock run proves"
                    + " nothing about reads");
        }
        return Optional.empty();
    }

    /** "partition 1 of 3": the kinds in {@code kinds} below their minimum, with their counts. */
    static String missing(Map<FaultKind, Integer> counted, Set<FaultKind> kinds) {
        return kinds.stream()
                .filter(kind -> counted.getOrDefault(kind, 0) < kind.minimum())
                .sorted()
                .map(kind -> kind.flagName() + " " + counted.getOrDefault(kind, 0) + " of " + kind.minimum())
                .collect(Collectors.joining(", "));
    }

    /** "pause 3, partition 1": the counts of the kinds in {@code kinds}. */
    static String describe(Map<FaultKind, Integer> counted, Set<FaultKind> kinds) {
        return counted.entrySet().stream()
                .filter(e -> kinds.contains(e.getKey()))
                .map(e -> e.getKey().flagName() + " " + e.getValue())
                .collect(Collectors.joining(", "))
                .toLowerCase(Locale.ROOT);
    }

    /** A child's standard output as {@link ClientEvent}s; other lines are not events. */
    private static Consumer<String> events(String child, int id, Consumer<ClientEvent> events) {
        return line -> ClientEvent.parse(child, id, line).ifPresent(events);
    }
}
