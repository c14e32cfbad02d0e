package dev.fencing.testsupport;

/**
 * Entry point for ZooKeeper in tests: an external server when {@value #CONNECT_ENV} is set, a
 * container when {@link ServerSource#MODE_ENV} asks for one, otherwise a real server in this JVM.
 *
 * <pre>{@code
 * try (ZooKeeperEndpoint zk = ZooKeeperServers.start()) {
 *     CuratorFramework client = CuratorFrameworkFactory.newClient(zk.connectString(), retry);
 *     ...
 * }
 * }</pre>
 *
 * Tests that must stop, restart or reconfigure the server use {@link EmbeddedZooKeeper} or {@link
 * EmbeddedZooKeeperEnsemble} directly.
 */
public final class ZooKeeperServers {
    /** Connect string of an external ZooKeeper, for example {@code zk1:2181,zk2:2181}. */
    public static final String CONNECT_ENV = "FENCING_ZOOKEEPER_CONNECT";

    private static ZooKeeperEndpoint shared;

    private ZooKeeperServers() {}

    /** One server for the whole JVM, started on first use and stopped when the JVM exits; closing it does nothing. */
    public static synchronized ZooKeeperEndpoint shared() {
        if (shared == null) {
            ZooKeeperEndpoint server = start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fencing-zookeeper-shutdown"));
            String connect = server.connectString();
            shared = new ZooKeeperEndpoint() {
                @Override
                public String connectString() {
                    return connect;
                }

                @Override
                public void close() {}

                @Override
                public String toString() {
                    return "shared " + server;
                }
            };
        }
        return shared;
    }

    public static ZooKeeperEndpoint start() {
        switch (ServerSource.choose(CONNECT_ENV)) {
            case EXTERNAL:
                String connect = System.getenv(CONNECT_ENV).trim();
                return new ZooKeeperEndpoint() {
                    @Override
                    public String connectString() {
                        return connect;
                    }

                    @Override
                    public void close() {}
                };
            case TESTCONTAINERS:
                return ContainerZooKeeper.start();
            default:
                return EmbeddedZooKeeper.builder().build();
        }
    }
}
