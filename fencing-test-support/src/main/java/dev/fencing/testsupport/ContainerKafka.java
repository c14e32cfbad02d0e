package dev.fencing.testsupport;

import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** A single-node KRaft Kafka in a container, for machines with a Docker engine ({@link ServerSource#TESTCONTAINERS}). */
final class ContainerKafka implements KafkaEndpoint {
    static final DockerImageName IMAGE = DockerImageName.parse("apache/kafka:4.4.0");

    private final KafkaContainer container;

    private ContainerKafka(KafkaContainer container) {
        this.container = container;
    }

    static ContainerKafka start() {
        KafkaContainer container = new KafkaContainer(IMAGE);
        container.start();
        return new ContainerKafka(container);
    }

    @Override
    public String bootstrapServers() {
        return container.getBootstrapServers();
    }

    @Override
    public void close() {
        container.stop();
    }
}
