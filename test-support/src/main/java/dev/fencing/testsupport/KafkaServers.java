package dev.fencing.testsupport;

/**
 * Entry point for Kafka in tests: an external cluster when {@value #BOOTSTRAP_ENV} is set, a container
 * when {@link ServerSource#MODE_ENV} asks for one, otherwise a real KRaft broker in this JVM.
 *
 * <pre>{@code
 * try (KafkaEndpoint kafka = KafkaServers.start()) {
 *     Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
 *     ...
 * }
 * }</pre>
 *
 * Tests that must stop or restart the broker use {@link EmbeddedKafka} directly. Topics on an external
 * cluster are left behind: tests should use fresh topic names.
 */
public final class KafkaServers {
    /** Bootstrap servers of an external Kafka cluster, for example {@code kafka1:9092,kafka2:9092}. */
    public static final String BOOTSTRAP_ENV = "FENCING_KAFKA_BOOTSTRAP";

    private KafkaServers() {}

    public static KafkaEndpoint start() {
        switch (ServerSource.choose(BOOTSTRAP_ENV)) {
            case EXTERNAL:
                String bootstrap = System.getenv(BOOTSTRAP_ENV).trim();
                return new KafkaEndpoint() {
                    @Override
                    public String bootstrapServers() {
                        return bootstrap;
                    }

                    @Override
                    public void close() {}
                };
            case TESTCONTAINERS:
                return ContainerKafka.start();
            default:
                return EmbeddedKafka.builder().build();
        }
    }
}
