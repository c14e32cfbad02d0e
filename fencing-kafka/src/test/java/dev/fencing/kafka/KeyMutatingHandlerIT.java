package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * The watermark belongs to the key the record arrived with, whatever the handler does to the bytes it got. A
 * {@code ByteBufferDeserializer} hands the handler the fetched bytes themselves (no copy), so only the
 * consumer's own copy of a new key keeps its watermark from changing with them.
 */
class KeyMutatingHandlerIT {

    @Test
    void aHandlerThatRewritesTheFetchedKeyBytesInPlaceDoesNotLetAStaleRecordOfThatKeyThrough() {
        String topic = KafkaFixture.newTopic("key-mutating", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.sendFenced(producer, topic, "sku-1", "fresh", 5);
            KafkaFixture.sendFenced(producer, topic, "sku-1", "stale", 3);
        }
        List<String> handled = new CopyOnWriteArrayList<>();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (FencedConsumer<ByteBuffer, String> consumer = FencedConsumer.builder(
                        new ByteBufferDeserializer(), new StringDeserializer())
                .properties(KafkaFixture.consumerConfig(KafkaFixture.newGroup("key-mutating")))
                .topics(topic)
                .meterRegistry(registry)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    ByteBuffer key = record.key();
                    key.put(key.position(), (byte) 'X'); // e.g. normalizing or decrypting the key in place
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
