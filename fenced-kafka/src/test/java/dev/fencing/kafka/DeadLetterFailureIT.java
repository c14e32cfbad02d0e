package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * A refused record that cannot be dead-lettered stops the consumer before its offset, and is dead-lettered
 * after a restart: nothing is lost. (The plain handler may have seen records after it in the same batch;
 * they are handled again after the restart: at least once.)
 */
class DeadLetterFailureIT {

    @Test
    void consumerStopsWithoutCommittingPastARecordItCouldNotDeadLetter() throws Exception {
        // given: a topic whose dead-letter topic does not exist (the broker does not create topics)
        String topic = "no-dlt-" + UUID.randomUUID().toString().substring(0, 8);
        KafkaFixture.kafka().createTopic(topic, 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "fine", 3);
            producer.send(new ProducerRecord<>(topic, "sku-1", "no token")).get();
            sendFenced(producer, topic, "sku-1", "after", 4);
        }
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("no-dlt");

        // when
        Throwable failure;
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "max.block.ms", 1_000)
                .topics(topic)
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            try {
                stopped.get(60, TimeUnit.SECONDS);
                failure = null;
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
        }

        // then: the consumer stopped without committing past the refused record
        assertThat(failure).isInstanceOf(DeadLetterException.class).hasMessageContaining(topic + ".dlt");
        assertThat(committed(group, topic)).isLessThanOrEqualTo(1);

        // when: the dead-letter topic exists and the consumer is restarted
        KafkaFixture.kafka().createTopic(topic + ".dlt", 1);
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 3);
        }

        // then: the refused record was not lost, and the handling went on after it
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
        assertThat(deadLetters).extracting(ConsumerRecord::value).containsExactly("no token");
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(handled).contains("fine").endsWith("after");
    }
}
