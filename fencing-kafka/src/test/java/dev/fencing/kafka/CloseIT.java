package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Defect 6: closing releases everything even when a part of it fails, the loop's future completes, and a
 * failed close never replaces the failure that stopped the loop.
 */
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

    @Test
    void aFailedCloseDoesNotHideTheFailureThatStoppedTheLoop() throws Exception {
        String topic = newTopic("close-after-failure", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "boom", 3);
        }
        StringDeserializer failingKeys = new StringDeserializer() {
            @Override
            public void close() {
                throw new IllegalStateException("cannot close");
            }
        };
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(failingKeys, new StringDeserializer())
                .properties(consumerConfig(newGroup("close-after-failure")))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    throw new IllegalStateException("handler down");
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();

            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasRootCauseMessage("handler down");
        }
    }
}
