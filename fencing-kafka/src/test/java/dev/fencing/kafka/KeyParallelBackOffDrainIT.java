package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A key-parallel close (or revocation) lets a record waiting out a retry back-off that ends before the drain
 * timeout run again and finish, as it lets any record in flight: only a back-off that outlasts the drain timeout
 * makes the drain give up on the partition at once.
 */
class KeyParallelBackOffDrainIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_back_off_drain_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /**
     * Record a (offset 0) fails once with a failure the application named, and waits out a back-off of five
     * seconds; b (offset 1, another key) finishes. The consumer is closed meanwhile, with a drain timeout of a
     * minute: a runs again within it, and the close commits past both. Cancelling a at once instead left the
     * stored offset at 0, below b, which a plain handler's next owner handles a second time.
     */
    @Test
    void aCloseWaitsForARecordWhoseBackOffEndsBeforeTheDrainTimeout() {
        String topic = newTopic("parallel-back-off-drain", 1);
        String group = newGroup("parallel-back-off-drain");
        List<String> calls = new CopyOnWriteArrayList<>();
        Map<String, Object> config = consumerConfig(group);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 5_000);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 5_000);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 120_000);
        config.put(FencedConsumerConfig.CLOSE_TIMEOUT_MS_CONFIG, 60_000);
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(2)
                .topics(topic)
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                .handler((record, token) -> {
                    calls.add(record.value());
                    if (record.value().equals("a")
                            && calls.stream().filter("a"::equals).count() == 1) {
                        throw new IllegalStateException("pricing service down");
                    }
                })
                .build();
        try (consumer;
                KafkaProducer<String, String> producer = producer()) {
            consumer.start();
            send(producer, topic, "a");
            send(producer, topic, "b");
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> calls.contains("a") && calls.contains("b"));
            assertThat(calls).as("handler calls before the close").containsExactlyInAnyOrder("a", "b");
            consumer.close(); // a waits out its back-off of five seconds meanwhile
        }
        assertThat(storedOffset(group, topic))
                .as("the stored offset after the close")
                .isEqualTo(2);
        assertThat(calls).as("handler calls").containsExactlyInAnyOrder("a", "b", "a");
    }

    private static long storedOffset(String group, String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT next_offset FROM fencing.kafka_offset WHERE consumer_group = ? AND topic = ?")
                .bind(0, group)
                .bind(1, topic)
                .mapTo(Long.class)
                .one());
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String value) {
        producer.send(FencedRecords.stamp(new ProducerRecord<>(topic, 0, value, value), 1));
        producer.flush();
    }
}
