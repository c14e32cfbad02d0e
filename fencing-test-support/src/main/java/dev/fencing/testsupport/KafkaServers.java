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
 * One cluster per test JVM: {@link #shared()}. Tests that must stop or restart the broker use {@link
 * EmbeddedKafka} directly. Topics on an external
 * cluster are left behind: tests should use fresh topic names.
 */
public final class KafkaServers {
    /** Bootstrap servers of an external Kafka cluster, for example {@code kafka1:9092,kafka2:9092}. */
    public static final String BOOTSTRAP_ENV = "FENCING_KAFKA_BOOTSTRAP";

    private static KafkaEndpoint shared;

    private KafkaServers() {}

    /**
     * One cluster for the whole JVM, started on first use and stopped when the JVM exits; closing it does
     * nothing. Test classes use topics of their own.
     */
    public static synchronized KafkaEndpoint shared() {
        if (shared == null) {
            KafkaEndpoint cluster = start();
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "fencing-kafka-shutdown"));
            shared = new KafkaEndpoint() {
                @Override
                public String bootstrapServers() {
                    return cluster.bootstrapServers();
                }

                @Override
                public void close() {}

                @Override
                public String toString() {
                    return "shared " + cluster;
                }
            };
        }
        return shared;
    }

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
