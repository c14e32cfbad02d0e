package dev.fencing.harness;

import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * The Kafka producer settings the tools' children publish with: every record acknowledged by all in-sync replicas,
 * idempotent (a retried send neither duplicates nor reorders a partition's records), sent at once (no linger), so
 * that a record's place in its partition follows the order the child sent it in. Stateless and thread-safe.
 *
 * <pre>{@code
 * KafkaProducer<String, String> producer = new KafkaProducer<>(
 *         ChildProducer.config(args.text("kafka"), "demo-worker-" + worker), new StringSerializer(), new StringSerializer());
 * }</pre>
 */
public final class ChildProducer {
    private ChildProducer() {}

    /** The settings for {@code bootstrap}, the producer named {@code clientId} in the broker's logs. */
    public static Map<String, Object> config(String bootstrap, String clientId) {
        return Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap,
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                5,
                ProducerConfig.LINGER_MS_CONFIG,
                0,
                ProducerConfig.CLIENT_ID_CONFIG,
                clientId);
    }
}
