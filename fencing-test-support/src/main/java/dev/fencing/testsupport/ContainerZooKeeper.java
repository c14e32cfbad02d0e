package dev.fencing.testsupport;

import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/** ZooKeeper in a container, for machines with a Docker engine ({@link ServerSource#TESTCONTAINERS}). */
final class ContainerZooKeeper implements ZooKeeperEndpoint {
    static final DockerImageName IMAGE = DockerImageName.parse("zookeeper:3.9.5");
    private static final int CLIENT_PORT = 2181;

    private final GenericContainer<?> container;

    private ContainerZooKeeper(GenericContainer<?> container) {
        this.container = container;
    }

    static ContainerZooKeeper start() {
        GenericContainer<?> container = new GenericContainer<>(IMAGE)
                .withExposedPorts(CLIENT_PORT)
                .withEnv("ZOO_4LW_COMMANDS_WHITELIST", "srvr,ruok")
                .waitingFor(Wait.forListeningPort());
        container.start();
        return new ContainerZooKeeper(container);
    }

    @Override
    public String connectString() {
        return container.getHost() + ":" + container.getMappedPort(CLIENT_PORT);
    }

    @Override
    public void close() {
        container.stop();
    }
}
