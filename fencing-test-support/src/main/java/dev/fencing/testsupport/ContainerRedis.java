package dev.fencing.testsupport;

import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

/** A Redis server in a container, for machines with a Docker engine ({@link ServerSource#TESTCONTAINERS}). */
final class ContainerRedis implements RedisEndpoint {
    static final DockerImageName IMAGE = DockerImageName.parse("redis:6.2.6");
    private static final int PORT = 6379;

    private final GenericContainer<?> container;

    private ContainerRedis(GenericContainer<?> container) {
        this.container = container;
    }

    static ContainerRedis start() {
        GenericContainer<?> container = new GenericContainer<>(IMAGE).withExposedPorts(PORT);
        container.start();
        return new ContainerRedis(container);
    }

    @Override
    public String uri() {
        return "redis://" + container.getHost() + ":" + container.getMappedPort(PORT);
    }

    @Override
    public void close() {
        container.stop();
    }

    @Override
    public String toString() {
        return "Redis container " + uri();
    }
}
