package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** The watermark belongs to the key the record arrived with, whatever a byte[] handler does to its array. */
class KeyMutatingHandlerIT {

    @Test
    void aHandlerThatRewritesItsKeyArrayInPlaceDoesNotLetAStaleRecordOfThatKeyThrough() {
        String topic = KafkaFixture.newTopic("key-mutating", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.sendFenced(producer, topic, "sku-1", "fresh", 5);
            KafkaFixture.sendFenced(producer, topic, "sku-1", "stale", 3);
        }
        List<String> handled = new CopyOnWriteArrayList<>();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (FencedConsumer<byte[], String> consumer = FencedConsumer.builder(
                        new ByteArrayDeserializer(), new StringDeserializer())
                .properties(KafkaFixture.consumerConfig(KafkaFixture.newGroup("key-mutating")))
                .topics(topic)
                .meterRegistry(registry)
                .handler((record, token) -> {
                    record.key()[0] = (byte) 'X'; // e.g. normalizing or decrypting the key in place
                    handled.add(record.value());
                })
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> registry.find("fencing.kafka.records.dead.lettered").counters().stream()
                                            .mapToDouble(c -> c.count())
                                            .sum()
                                    + handled.size()
                            >= 2);
        }
        assertThat(handled).containsExactly("fresh");
    }
}
