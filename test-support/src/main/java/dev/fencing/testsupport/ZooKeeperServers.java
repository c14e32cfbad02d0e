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

    private ZooKeeperServers() {}

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
