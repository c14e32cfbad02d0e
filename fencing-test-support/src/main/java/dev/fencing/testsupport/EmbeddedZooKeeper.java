package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;

/**
 * A real standalone ZooKeeper server in this JVM (Curator's {@code TestingServer}) that a test can
 * stop and restart on the same port and data directory.
 *
 * <pre>{@code
 * try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().containerCheckInterval(Duration.ofMillis(200)).build()) {
 *     ...
 *     zk.restart(); // same port, same data: znodes and sequence counters survive
 * }
 * }</pre>
 *
 * Not thread-safe: one test drives it.
 */
public final class EmbeddedZooKeeper implements ZooKeeperEndpoint {
    /** ZooKeeper reads this system property when a server starts; it has no config-file key. */
    static final String CONTAINER_INTERVAL_PROPERTY = "znode.container.checkIntervalMs";

    private final TestingServer server;
    private final Duration containerCheckInterval;
    private final boolean ownsDataDirectory;

    private EmbeddedZooKeeper(Builder builder) {
        this.containerCheckInterval = builder.containerCheckInterval;
        this.ownsDataDirectory = builder.dataDirectory == null;
        try {
            Path dataDirectory = builder.dataDirectory != null
                    ? Files.createDirectories(builder.dataDirectory)
                    : Files.createTempDirectory("fencing-zk-");
            Map<String, Object> properties = new HashMap<>();
            properties.put("admin.enableServer", "false");
            InstanceSpec spec = new InstanceSpec(
                    dataDirectory.toFile(),
                    builder.port,
                    -1,
                    -1,
                    ownsDataDirectory,
                    -1,
                    builder.tickTimeMillis,
                    -1,
                    properties,
                    "127.0.0.1");
            this.server = withContainerInterval(() -> new TestingServer(spec, true));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String connectString() {
        return server.getConnectString();
    }

    public int port() {
        return server.getPort();
    }

    public Path dataDirectory() {
        return server.getTempDirectory().toPath();
    }

    /** Stops the server; its data directory stays until {@link #close()}. */
    public void stop() {
        try {
            server.stop();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts the server again on the same port and the same data directory. */
    public void restart() {
        withContainerInterval(() -> {
            server.restart();
            return server;
        });
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private <T> T withContainerInterval(ServerAction<T> action) {
        String previous = System.getProperty(CONTAINER_INTERVAL_PROPERTY);
        if (containerCheckInterval != null) {
            System.setProperty(CONTAINER_INTERVAL_PROPERTY, Long.toString(containerCheckInterval.toMillis()));
        }
        try {
            return action.run();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("embedded ZooKeeper failed to start: " + e.getMessage(), e);
        } finally {
            if (containerCheckInterval != null) {
                if (previous == null) {
                    System.clearProperty(CONTAINER_INTERVAL_PROPERTY);
                } else {
                    System.setProperty(CONTAINER_INTERVAL_PROPERTY, previous);
                }
            }
        }
    }

    @FunctionalInterface
    private interface ServerAction<T> {
        T run() throws Exception;
    }

    /** Options for an {@link EmbeddedZooKeeper}; every setter checks its value. */
    public static final class Builder {
        private int port = -1;
        private int tickTimeMillis = 500;
        private Path dataDirectory;
        private Duration containerCheckInterval;

        private Builder() {}

        /** A fixed client port; by default a free one is picked. */
        public Builder port(int port) {
            if (port <= 0 || port > 65_535) {
                throw new IllegalArgumentException("port must be 1..65535, got " + port);
            }
            this.port = port;
            return this;
        }

        /**
         * ZooKeeper's tick; the smallest session timeout the server grants is one tick. Default 500 ms,
         * so tests can use short sessions.
         */
        public Builder tickTime(Duration tickTime) {
            Objects.requireNonNull(tickTime, "tickTime");
            if (tickTime.isNegative() || tickTime.isZero() || tickTime.toMillis() > 10_000) {
                throw new IllegalArgumentException("tickTime must be within (0, 10s], got " + tickTime);
            }
            this.tickTimeMillis = (int) tickTime.toMillis();
            return this;
        }

        /** A data directory kept after {@link #close()}; by default a temporary one that is deleted. */
        public Builder dataDirectory(Path dataDirectory) {
            this.dataDirectory = Objects.requireNonNull(dataDirectory, "dataDirectory");
            return this;
        }

        /** How often the server deletes empty CONTAINER nodes (ZooKeeper's default is one minute). */
        public Builder containerCheckInterval(Duration interval) {
            Objects.requireNonNull(interval, "containerCheckInterval");
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("containerCheckInterval must be positive, got " + interval);
            }
            this.containerCheckInterval = interval;
            return this;
        }

        public EmbeddedZooKeeper build() {
            return new EmbeddedZooKeeper(this);
        }
    }
}
