package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.kafka;
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
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Defect 4: refused records whose dead-letter topic went away stop the consumer at the first of them, within
 * the unit's dead-letter deadline (not {@code max.block.ms} per record), with a {@link DeadLetterException}
 * naming the topic and the offset; nothing past it is committed, and a restart dead-letters them all: nothing
 * is lost. (The plain handler may have seen records after them in the same unit; they are handled again
 * after the restart: at least once.)
 */
class DeadLetterFailureIT {
    private static final int REFUSED = 50;

    @Test
    void consumerStopsAtTheFirstRecordItCouldNotDeadLetterAndCommitsNothingPastIt() throws Exception {
        // given: a dead-letter topic that exists when the consumer starts and is deleted before refused records come
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String topic = "dlt-goes-" + suffix;
        String doomed = "doomed-dlt-" + suffix;
        kafka().createTopic(topic, 1);
        kafka().createTopic(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, 1);
        kafka().createTopic(doomed, 1);
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("dlt-goes");

        Throwable failure;
        try (KafkaProducer<String, String> producer = producer();
                FencedConsumer<String, String> consumer = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(consumerConfig(group))
                        .deadLetterTopic(doomed)
                        .deadLetterTimeout(Duration.ofSeconds(1))
                        .topics(topic)
                        .heapOnlyWatermarksLostOnRestart()
                        .handler((record, token) -> handled.add(record.value()))
                        .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            sendFenced(producer, topic, "sku-1", "fine", 3);
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == 1);
            try (Admin admin =
                    Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
                admin.deleteTopics(List.of(doomed)).all().get(30, TimeUnit.SECONDS);
            }
            // when: many refused records arrive in one unit
            for (int i = 0; i < REFUSED; i++) {
                producer.send(new ProducerRecord<>(topic, "sku-1", "no token " + i));
            }
            sendFenced(producer, topic, "sku-1", "after", 4);
            try {
                stopped.get(60, TimeUnit.SECONDS);
                failure = null;
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
        }

        // then: the consumer stopped at the first refused record, naming it, without committing past it
        // (the dead-letter producer fetched the topic's metadata at start, so its first send is queued for the
        // deleted topic's old partition and goes unacknowledged; a producer that learnt of the deletion first
        // fails the send at once)
        assertThat(failure)
                .isInstanceOf(DeadLetterException.class)
                .hasMessageContaining(topic + "-0 offset 1 to topic " + doomed)
                .message()
                .containsAnyOf("not acknowledged within fencing.dead.letter.timeout.ms=1000", "the write failed");
        assertThat(((DeadLetterException) failure).deadLetterTopic()).isEqualTo(doomed);
        assertThat(committed(group, topic)).isEqualTo(1);

        // when: restarted with a dead-letter topic that exists
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == REFUSED + 2);
        }

        // then: no refused record was lost, and the handling went on after them
        List<ConsumerRecord<String, String>> deadLetters =
                readAll(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, REFUSED);
        assertThat(deadLetters).hasSize(REFUSED);
        assertThat(deadLetters.get(0).value()).isEqualTo("no token 0");
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(handled).startsWith("fine").endsWith("after");
    }
}
