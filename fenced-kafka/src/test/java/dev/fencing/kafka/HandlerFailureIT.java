package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** A plain handler's failure stops the consumer with that failure, not with something it caused later. */
class HandlerFailureIT {

    @Test
    void aHandlerFailingOnAPartitionsFirstRecordStopsTheConsumerWithThatFailure() throws Exception {
        String topic = KafkaFixture.newTopic("handler-failure", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.sendFenced(producer, topic, "sku-1", "reserve 1", 5);
        }
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(KafkaFixture.consumerConfig(KafkaFixture.newGroup("handler-failure")))
                .topics(topic)
                .handler((record, token) -> {
                    throw new IllegalStateException("inventory service down for " + record.key());
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();

            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasMessageContaining("offset 0")
                    .hasRootCauseMessage("inventory service down for sku-1");
        }
    }
}
