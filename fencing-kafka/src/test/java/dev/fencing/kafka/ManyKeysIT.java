package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Issue test 6: 100,000 distinct keys. Memory stays bounded because a consumer holds watermarks only for
 * the partitions it owns (one entry per distinct key, never per record) and drops them when a partition
 * goes to another member; the store keeps the rest.
 */
class ManyKeysIT {
    private static final int KEYS = 100_000;

    @Test
    void hundredThousandKeysAreFencedWithOneWatermarkPerKeyHeldOnlyForOwnedPartitions() {
        // given: every key written under token 2, then a stale record under token 1, then every 10th key under 3
        String topic = newTopic("many-keys", 2);
        Map<String, Object> producerConfig = new HashMap<>();
        producerConfig.put(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.kafka().bootstrapServers());
        producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        producerConfig.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer())) {
            for (int pass = 0; pass < 3; pass++) {
                for (int k = 0; k < KEYS; k++) {
                    if (pass == 2 && k % 10 != 0) {
                        continue;
                    }
                    long token = pass == 0 ? 2 : pass == 1 ? 1 : 3;
                    producer.send(FencedRecords.create(topic, "key-" + k, "v" + pass, token));
                }
            }
            producer.flush();
        }
        int total = KEYS * 2 + KEYS / 10;
        Map<String, Long> lastHandled = new ConcurrentHashMap<>();
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String group = newGroup("many-keys");
        Map<String, Object> config = consumerConfig(group);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2_000);

        // when: one consumer takes everything
        try (FencedConsumer<String, String> first = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .property(FencedConsumerConfig.STALE_RECORDS_CONFIG, "drop")
                .topics(topic)
                .watermarkStore(store)
                .meterRegistry(registry)
                .handler((record, token) -> {
                    Long previous = lastHandled.put(record.key(), token);
                    if (previous != null && previous > token) {
                        throw new AssertionError(record.key() + " went from " + previous + " to " + token);
                    }
                })
                .build()) {
            first.start();
            await().atMost(Duration.ofSeconds(90))
                    .until(() -> count(registry, "fencing.kafka.records.accepted")
                                    + count(registry, "fencing.kafka.records.dropped")
                            == total);

            // then: correct, and one watermark per key, not per record
            assertThat(count(registry, "fencing.kafka.records.accepted")).isEqualTo(KEYS + KEYS / 10);
            assertThat(count(registry, "fencing.kafka.records.dropped")).isEqualTo(KEYS);
            assertThat(lastHandled).hasSize(KEYS);
            assertThat(lastHandled.values().stream().filter(t -> t == 3)).hasSize(KEYS / 10);
            assertThat(lastHandled.values().stream().filter(t -> t == 1)).isEmpty();
            assertThat(first.heldWatermarks()).isEqualTo(KEYS);
            assertThat(store.size()).isEqualTo(KEYS);
            assertThat(registry.get("fencing.kafka.watermarks.held").gauge().value())
                    .isEqualTo(KEYS);

            // when: a second member joins, the first drops the watermarks of the partition it gives away
            try (FencedConsumer<String, String> second = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(config)
                    .topics(topic)
                    .watermarkStore(store)
                    .handler((record, token) -> {})
                    .build()) {
                second.start();
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> first.assignment().size() == 1
                                && second.assignment().size() == 1);
                assertThat(first.heldWatermarks()).isLessThan(KEYS).isPositive();
                assertThat(first.heldWatermarks() + second.heldWatermarks()).isEqualTo(KEYS);
            }
        }
    }

    private static double count(SimpleMeterRegistry registry, String name) {
        return registry.find(name).counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }
}
