package dev.fencing.testsupport;

import java.util.List;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/** A single etcd member in a container, for machines with a Docker engine ({@link ServerSource#TESTCONTAINERS}). */
final class ContainerEtcd implements EtcdEndpoint {
    /** The same etcd version as the Debian package {@link EtcdBinary} falls back to. */
    static final DockerImageName IMAGE = DockerImageName.parse("gcr.io/etcd-development/etcd:v3.4.23");

    private static final int PORT = 2379;

    private final GenericContainer<?> container;

    private ContainerEtcd(GenericContainer<?> container) {
        this.container = container;
    }

    static ContainerEtcd start() {
        GenericContainer<?> container = new GenericContainer<>(IMAGE)
                .withCommand(
                        "/usr/local/bin/etcd",
                        "--listen-client-urls",
                        "http://0.0.0.0:" + PORT,
                        "--advertise-client-urls",
                        "http://0.0.0.0:" + PORT)
                .withExposedPorts(PORT)
                .waitingFor(Wait.forHttp("/health").forPort(PORT).forStatusCode(200));
        container.start();
        return new ContainerEtcd(container);
    }

    @Override
    public List<String> endpoints() {
        return List.of("http://" + container.getHost() + ":" + container.getMappedPort(PORT));
    }

    @Override
    public void close() {
        container.stop();
    }

    @Override
    public String toString() {
        return "etcd container " + endpoints().get(0);
    }
}
