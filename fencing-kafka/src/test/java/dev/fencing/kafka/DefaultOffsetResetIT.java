package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * A new group with no offset anywhere starts at the beginning of its partitions unless told otherwise: Kafka's
 * own default, {@code auto.offset.reset=latest}, would skip the records published before the consumer first
 * joined, with nothing applied, dead-lettered or counted.
 */
class DefaultOffsetResetIT {

    @Test
    void aNewGroupWithoutAutoOffsetResetAppliesTheRecordsPublishedBeforeItStarted() {
        String topic = newTopic("reset", 1);
        List<String> applied = new CopyOnWriteArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "before", 1);
            try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers(),
                            ConsumerConfig.GROUP_ID_CONFIG, newGroup("reset")))
                    .topics(topic)
                    .watermarkStore(new InMemoryWatermarkStore())
                    .handler((record, token) -> applied.add(record.value()))
                    .build()) {
                consumer.start();
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> !consumer.assignment().isEmpty());
                sendFenced(producer, topic, "sku-1", "after", 2);
                await().atMost(Duration.ofSeconds(60)).until(() -> applied.contains("after"));
            }
        }
        assertThat(applied).containsExactly("before", "after");
    }
}
