package dev.fencing.testsupport;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Kafka cluster in this JVM: one KRaft process that is both controller and broker,
 * on a log directory formatted the way {@code kafka-storage.sh format} does it.
 *
 * <pre>{@code
 * try (EmbeddedKafka kafka = EmbeddedKafka.builder().build()) {
 *     kafka.createTopic("orders", 3);
 *     Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
 *     ...
 * }
 * }</pre>
 *
 * <p>Settings are those of a one-node test cluster: replication factor 1 for the internal topics, no
 * initial rebalance delay for consumer groups, one partition for {@code __consumer_offsets} (so a
 * group's coordinator is ready at once), auto topic creation off (tests create their topics). Starting
 * takes about 2 to 3 seconds; share one broker per test class.
 *
 * <p>Not thread-safe to start and close; clients on any thread may use it while it runs.
 */
public final class EmbeddedKafka implements KafkaEndpoint {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafka.class);
    private static final int NODE_ID = 1;
    private static final String CONTROLLER_LISTENER = "CONTROLLER";

    private final KafkaRaftServer server;
    private final Path logDirectory;
    private final String bootstrapServers;
    private boolean closed;

    private EmbeddedKafka(Builder builder) {
        try {
            this.logDirectory = builder.logDirectoryParent == null
                    ? Files.createTempDirectory("fencing-kafka-")
                    : Files.createTempDirectory(builder.logDirectoryParent, "fencing-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int[] free = freePorts(2);
        int brokerPort = builder.port > 0 ? builder.port : free[0];
        int controllerPort = free[1] != brokerPort ? free[1] : free[0];
        this.bootstrapServers = builder.host + ":" + brokerPort;

        Map<String, Object> properties = new HashMap<>();
        properties.put("process.roles", "broker,controller");
        properties.put("node.id", Integer.toString(NODE_ID));
        properties.put("controller.quorum.voters", NODE_ID + "@127.0.0.1:" + controllerPort);
        properties.put(
                "listeners",
                "PLAINTEXT://" + builder.host + ":" + brokerPort + "," + CONTROLLER_LISTENER + "://127.0.0.1:"
                        + controllerPort);
        properties.put("advertised.listeners", "PLAINTEXT://" + builder.host + ":" + brokerPort);
        properties.put("controller.listener.names", CONTROLLER_LISTENER);
        properties.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT," + CONTROLLER_LISTENER + ":PLAINTEXT");
        properties.put("inter.broker.listener.name", "PLAINTEXT");
        properties.put("log.dirs", logDirectory.toString());
        properties.put("num.partitions", "1");
        properties.put("auto.create.topics.enable", "false");
        properties.put("offsets.topic.replication.factor", "1");
        properties.put("offsets.topic.num.partitions", "1");
        properties.put("transaction.state.log.replication.factor", "1");
        properties.put("transaction.state.log.min.isr", "1");
        properties.put("transaction.state.log.num.partitions", "1");
        properties.put("share.coordinator.state.topic.replication.factor", "1");
        properties.put("share.coordinator.state.topic.min.isr", "1");
        properties.put("group.initial.rebalance.delay.ms", "0");
        properties.put("log.flush.interval.messages", Long.toString(Long.MAX_VALUE));
        properties.putAll(builder.overrides);

        long started = System.nanoTime();
        try {
            format(logDirectory);
            this.server = new KafkaRaftServer(new KafkaConfig(properties), Time.SYSTEM);
            server.startup();
        } catch (RuntimeException e) {
            deleteQuietly(logDirectory);
            throw new IllegalStateException(
                    "embedded Kafka failed to start on port " + brokerPort + ": " + e.getMessage(), e);
        }
        LOG.info(
                "embedded Kafka started at {} in {} ms (log dir {})",
                bootstrapServers,
                (System.nanoTime() - started) / 1_000_000,
                logDirectory);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String bootstrapServers() {
        return bootstrapServers;
    }

    public Path logDirectory() {
        return logDirectory;
    }

    @Override
    public String toString() {
        return "embedded Kafka " + bootstrapServers;
    }

    /** Stops the broker and deletes its log directory; safe to call twice. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            deleteQuietly(logDirectory);
        }
    }

    private static void format(Path logDirectory) {
        try {
            new Formatter()
                    .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                    .setNodeId(NODE_ID)
                    .setClusterId(Uuid.randomUuid().toString())
                    .addDirectory(logDirectory.toString())
                    .setMetadataLogDirectory(logDirectory.toString())
                    .setReleaseVersion(MetadataVersion.latestProduction())
                    .setControllerListenerName(CONTROLLER_LISTENER)
                    .run();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("could not format Kafka log directory " + logDirectory, e);
        }
    }

    /**
     * Distinct free ports: all sockets stay open until every port is chosen, since a port closed right
     * away can be handed out again by the next request (which once gave both listeners one port).
     */
    static int[] freePorts(int count) {
        ServerSocket[] sockets = new ServerSocket[count];
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                sockets[i] = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                sockets[i].setReuseAddress(true);
                ports[i] = sockets[i].getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (ServerSocket socket : sockets) {
                if (socket != null) {
                    try {
                        socket.close();
                    } catch (IOException ignored) {
                        // the port is free either way once this JVM lets go of it
                    }
                }
            }
        }
    }

    private static void deleteQuietly(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            LOG.warn("could not delete Kafka log directory {}: {}", directory, e.toString());
        }
    }

    /** Options for an {@link EmbeddedKafka}; every setter checks its value. */
    public static final class Builder {
        private int port = -1;
        private String host = "127.0.0.1";
        private final Map<String, String> overrides = new HashMap<>();
        private Path logDirectoryParent;

        private Builder() {}

        /**
         * Where the broker's temporary log directory is created (it is still deleted on {@link #close()});
         * by default the system's temporary directory. The directory must exist.
         */
        public Builder logDirectoryParent(Path parent) {
            Objects.requireNonNull(parent, "parent");
            if (!Files.isDirectory(parent)) {
                throw new IllegalArgumentException("logDirectoryParent " + parent + " is not a directory");
            }
            this.logDirectoryParent = parent;
            return this;
        }

        /** A fixed client port; by default a free one is picked. */
        public Builder port(int port) {
            if (port <= 0 || port > 65_535) {
                throw new IllegalArgumentException("port must be 1..65535, got " + port);
            }
            this.port = port;
            return this;
        }

        /**
         * The address of this host the broker listens on and advertises to clients (default 127.0.0.1). Kafka
         * tells every client to connect to the advertised address, so a client in another network namespace
         * (whose 127.0.0.1 is its own) needs the broker on an address it can reach, such as the host end of
         * its veth (see {@link NetworkNamespace}); clients on this host reach that address too.
         */
        public Builder host(String host) {
            Objects.requireNonNull(host, "host");
            if (host.isBlank() || host.contains(":") || host.contains(",")) {
                throw new IllegalArgumentException("host must be one address or name of this host, got '" + host + "'");
            }
            this.host = host;
            return this;
        }

        /** Any broker setting, for example {@code log.segment.bytes}; applied after the test defaults. */
        public Builder brokerProperty(String key, String value) {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(value, "value");
            if (key.isBlank()) {
                throw new IllegalArgumentException("broker property key must not be blank");
            }
            overrides.put(key, value);
            return this;
        }

        public EmbeddedKafka build() {
            return new EmbeddedKafka(this);
        }
    }
}
