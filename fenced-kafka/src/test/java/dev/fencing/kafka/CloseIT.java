package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** Defect 6: closing releases everything even when a part of it fails, and the loop's future completes. */
class CloseIT {

    @Test
    void aDeserializerThatFailsToCloseNeitherStopsTheOtherFromClosingNorLeavesTheFutureOpen() throws Exception {
        String topic = newTopic("close", 1);
        AtomicBoolean valueClosed = new AtomicBoolean();
        StringDeserializer failingKeys = new StringDeserializer() {
            @Override
            public void close() {
                throw new IllegalStateException("cannot close");
            }
        };
        StringDeserializer values = new StringDeserializer() {
            @Override
            public void close() {
                valueClosed.set(true);
            }
        };
        FencedConsumer<String, String> consumer = FencedConsumer.builder(failingKeys, values)
                .properties(consumerConfig(newGroup("close")))
                .topics(topic)
                .closeTimeout(Duration.ofSeconds(5))
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {})
                .build();
        CompletableFuture<Void> stopped = consumer.start();
        await().atMost(Duration.ofSeconds(60))
                .until(() -> !consumer.assignment().isEmpty());

        consumer.close();
        consumer.close();

        stopped.get(30, TimeUnit.SECONDS); // completed normally: the failed close is logged, not thrown
        assertThat(valueClosed).isTrue();
        assertThat(consumer.assignment()).isEmpty();
    }
}
