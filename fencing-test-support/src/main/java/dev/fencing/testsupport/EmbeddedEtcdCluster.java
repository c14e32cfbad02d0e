package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real etcd cluster of one or more members, each a child process of this JVM run from the binary that {@link
 * EtcdBinary} finds or fetches (no Docker, nothing installed by hand). Every member listens on {@code 127.0.0.1}
 * (or {@link Builder#host}) on a client port and a peer port of its own and keeps its data in a fresh directory;
 * {@link #close()} kills every member and deletes the directories. A single member starts in about a second, three
 * in about two.
 *
 * <pre>{@code
 * try (EmbeddedEtcdCluster etcd = EmbeddedEtcdCluster.start(3)) {
 *     Client client = Client.builder().endpoints(etcd.endpoints().toArray(String[]::new)).build();
 *     EtcdMember leader = etcd.awaitLeader(Duration.ofSeconds(10));
 *     leader.kill();                                    // a crash; the other two elect a new leader
 *     EtcdMember next = etcd.awaitLeader(Duration.ofSeconds(10));
 *     leader.start();                                   // rejoins as a follower
 * }
 * }</pre>
 *
 * <p>Construction returns once every member reports itself healthy (it has a leader). The member processes never
 * outlive the JVM's orderly exit: {@link #close()} kills them, and a shutdown hook does so when a test forgets to
 * close (a JVM killed by SIGKILL runs no hooks; its members then linger until killed by hand).
 *
 * <p>Thread-safe.
 */
public final class EmbeddedEtcdCluster implements EtcdEndpoint {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedEtcdCluster.class);
    private static final int PORT_ATTEMPTS = 3;
    /** Flags the cluster sets itself; {@link Builder#flag} refuses them. */
    private static final Set<String> OWN_FLAGS = Set.of(
            "name",
            "data-dir",
            "listen-client-urls",
            "advertise-client-urls",
            "listen-peer-urls",
            "initial-advertise-peer-urls",
            "initial-cluster",
            "initial-cluster-state",
            "initial-cluster-token",
            "heartbeat-interval",
            "election-timeout");

    private final Path directory;
    private final Duration startTimeout;
    private final Thread reaper = new Thread(this::destroy, "fencing-etcd-reaper");
    private volatile List<EtcdMember> members = List.of();
    private boolean closed;

    private EmbeddedEtcdCluster(Builder builder) {
        this.startTimeout = builder.startTimeout;
        Path binary = EtcdBinary.locate();
        try {
            this.directory = Files.createTempDirectory("fencing-etcd");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for embedded etcd", e);
        }
        Runtime.getRuntime().addShutdownHook(reaper);
        long started = System.nanoTime();
        try {
            startOnFreePorts(builder, binary);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        LOG.info("{} started in {} ms", this, (System.nanoTime() - started) / 1_000_000);
    }

    /** Starts {@code members} members with the default settings and waits until each is healthy. */
    public static EmbeddedEtcdCluster start(int members) {
        return builder().members(members).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public List<String> endpoints() {
        return members.stream().map(EtcdMember::clientUrl).collect(Collectors.toUnmodifiableList());
    }

    /** Every member, running or not, in the order of their names ({@code etcd1}, {@code etcd2}, ...). */
    public List<EtcdMember> members() {
        return members;
    }

    /**
     * The running member that reports itself leader now; if two do (an old leader that has not yet heard of a
     * newer term), the one with the higher raft term.
     */
    public Optional<EtcdMember> leader() {
        EtcdMember leader = null;
        long leaderTerm = -1;
        for (EtcdMember member : members) {
            if (!member.isRunning() || !member.isLeader()) {
                continue;
            }
            OptionalLong term = member.raftTerm();
            if (term.isPresent() && term.getAsLong() > leaderTerm) {
                leader = member;
                leaderTerm = term.getAsLong();
            }
        }
        return Optional.ofNullable(leader);
    }

    /**
     * Waits until a running member is the leader and healthy, and returns it.
     *
     * @throws IllegalStateException if none is within {@code timeout}
     */
    public EtcdMember awaitLeader(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Optional<EtcdMember> leader = leader();
            if (leader.isPresent() && leader.get().isHealthy()) {
                return leader.get();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(this + " has no leader after " + timeout.toMillis() + " ms");
            }
            sleep(50);
        }
    }

    /** The directory that holds every member's data directory and log, deleted on {@link #close()}. */
    public Path directory() {
        return directory;
    }

    /** Kills every member and deletes their directories. Safe to call twice. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        destroy();
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the hook runs anyway
        }
    }

    @Override
    public String toString() {
        return "embedded etcd cluster of " + members.size() + " " + endpoints();
    }

    private void startOnFreePorts(Builder builder, Path binary) {
        RuntimeException failure = null;
        for (int attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
            List<EtcdMember> candidates = create(builder, binary, freePorts(builder.host, 2 * builder.members));
            members = candidates;
            try {
                candidates.forEach(EtcdMember::launch);
                long deadline = System.nanoTime() + startTimeout.toNanos();
                for (EtcdMember member : candidates) {
                    member.awaitHealthy(deadline);
                }
                return;
            } catch (RuntimeException e) {
                failure = e;
                candidates.forEach(EtcdMember::destroy);
                // another process may have taken a port between our probe and etcd's bind: new ports, new try
                boolean portTaken = candidates.stream()
                        .anyMatch(member -> member.lastLogLines().contains("address already in use"));
                if (!portTaken) {
                    break;
                }
                LOG.info("etcd could not bind its ports (attempt {} of {}), trying others", attempt, PORT_ATTEMPTS);
                candidates.forEach(member -> deleteTree(member.dataDirectory().getParent()));
            }
        }
        throw failure;
    }

    private List<EtcdMember> create(Builder builder, Path binary, List<Integer> ports) {
        Map<String, String> peers = new LinkedHashMap<>();
        for (int i = 0; i < builder.members; i++) {
            peers.put("etcd" + (i + 1), "http://" + builder.host + ":" + ports.get(2 * i + 1));
        }
        List<String> clusterArguments = new ArrayList<>(List.of(
                "--initial-cluster",
                peers.entrySet().stream()
                        .map(peer -> peer.getKey() + "=" + peer.getValue())
                        .collect(Collectors.joining(",")),
                "--initial-cluster-state",
                "new",
                // a token of its own, so that members of two clusters never take each other for peers
                "--initial-cluster-token",
                "fencing-" + UUID.randomUUID(),
                "--heartbeat-interval",
                Long.toString(builder.heartbeatInterval.toMillis()),
                "--election-timeout",
                Long.toString(builder.electionTimeout.toMillis())));
        builder.flags.forEach((name, value) -> clusterArguments.add("--" + name + "=" + value));
        List<EtcdMember> created = new ArrayList<>();
        for (int i = 0; i < builder.members; i++) {
            String name = "etcd" + (i + 1);
            created.add(new EtcdMember(
                    name,
                    builder.host,
                    ports.get(2 * i),
                    ports.get(2 * i + 1),
                    directory.resolve(name),
                    binary,
                    clusterArguments,
                    startTimeout));
        }
        return List.copyOf(created);
    }

    /** Kills every member (for close and the shutdown hook) and deletes the cluster's directory. */
    private void destroy() {
        members.forEach(EtcdMember::destroy);
        deleteTree(directory);
    }

    /** {@code count} distinct ports free on {@code host} now: all held open at once, so none repeats. */
    private static List<Integer> freePorts(String host, int count) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            InetAddress address = InetAddress.getByName(host);
            for (int i = 0; i < count; i++) {
                sockets.add(new ServerSocket(0, 1, address));
            }
            return sockets.stream().map(ServerSocket::getLocalPort).collect(Collectors.toList());
        } catch (IOException e) {
            throw new UncheckedIOException("no free ports on " + host + " for embedded etcd", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException e) {
                    // closing a listening socket we opened does not fail in a way that matters here
                }
            }
        }
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("could not delete etcd directory {}: {}", root, e.toString());
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for etcd", e);
        }
    }

    /** Options for an {@link EmbeddedEtcdCluster}; every setter checks its value. */
    public static final class Builder {
        private int members = 1;
        private String host = "127.0.0.1";
        private Duration heartbeatInterval = Duration.ofMillis(100);
        private Duration electionTimeout = Duration.ofMillis(1000);
        private Duration startTimeout = Duration.ofSeconds(30);
        private final Map<String, String> flags = new LinkedHashMap<>();

        private Builder() {}

        /** How many members (default 1); 3 survive the loss of one. */
        public Builder members(int members) {
            if (members < 1 || members > 9) {
                throw new IllegalArgumentException("members must be between 1 and 9, got " + members);
            }
            this.members = members;
            return this;
        }

        /**
         * The address of this host that every member listens on, for clients and peers alike (default {@code
         * 127.0.0.1}). A client in another network namespace reaches the cluster through such an address (see
         * {@link NetworkNamespace}).
         */
        public Builder host(String host) {
            if (host == null || host.isBlank() || host.contains(":") || host.contains("/")) {
                throw new IllegalArgumentException(
                        "host must be an IPv4 address or name of this host, got '" + host + "'");
            }
            this.host = host.trim();
            return this;
        }

        /** etcd's {@code --heartbeat-interval} (default 100 ms, as etcd's own). */
        public Builder heartbeatInterval(Duration interval) {
            this.heartbeatInterval = positiveMillis("heartbeatInterval", interval);
            return this;
        }

        /**
         * etcd's {@code --election-timeout} (default 1 s, as etcd's own): how long followers wait for a dead
         * leader before electing another. At least 5 heartbeat intervals, as etcd demands.
         */
        public Builder electionTimeout(Duration timeout) {
            this.electionTimeout = positiveMillis("electionTimeout", timeout);
            return this;
        }

        /** How long construction and {@link EtcdMember#start()} wait for a member to be healthy (default 30 s). */
        public Builder startTimeout(Duration timeout) {
            this.startTimeout = positiveMillis("startTimeout", timeout);
            return this;
        }

        /**
         * Any other etcd flag for every member, without its dashes, for example {@code
         * ("auto-compaction-retention", "1")}. The flags that name ports, directories and the cluster are chosen
         * by the cluster itself and refused here.
         */
        public Builder flag(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (!name.matches("[a-z][a-z0-9-]*")) {
                throw new IllegalArgumentException("not an etcd flag name (without dashes): '" + name + "'");
            }
            if (OWN_FLAGS.contains(name)) {
                throw new IllegalArgumentException("'" + name + "' is chosen by the cluster itself");
            }
            if (value.contains("\n")) {
                throw new IllegalArgumentException("a flag value is one line, got '" + value + "'");
            }
            flags.put(name, value);
            return this;
        }

        /**
         * Starts the members and waits until each is healthy.
         *
         * @throws IllegalArgumentException if the election timeout is under 5 heartbeat intervals
         * @throws IllegalStateException if there is no etcd binary (see {@link EtcdBinary}) or a member does not
         *     become healthy in time; the message quotes its log
         */
        public EmbeddedEtcdCluster build() {
            if (electionTimeout.compareTo(heartbeatInterval.multipliedBy(5)) < 0) {
                throw new IllegalArgumentException("electionTimeout (" + electionTimeout.toMillis()
                        + " ms) must be at least 5 heartbeat intervals (" + heartbeatInterval.toMillis() + " ms)");
            }
            return new EmbeddedEtcdCluster(this);
        }

        private static Duration positiveMillis(String what, Duration value) {
            Objects.requireNonNull(value, what);
            if (value.toMillis() < 1) {
                throw new IllegalArgumentException(what + " must be at least 1 ms, got " + value);
            }
            return value;
        }
    }
}
