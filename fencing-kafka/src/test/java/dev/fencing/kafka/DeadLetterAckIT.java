package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * The serial consumer commits on an interval and awaits a unit's dead letters only before the save that passes
 * them: the records after a refused one are handled at once, in the same unit, but no offset, in the store or in
 * Kafka, passes the refused record unless its dead letter was acknowledged. The dead-letter topic here fails
 * every write for real: it takes no record as large as a dead letter ({@code max.message.bytes}), and the broker
 * says so in the write's acknowledgement, after the send returned.
 */
class DeadLetterAckIT {
    private static final int BEFORE = 5; // accepted records before the refused one, at offsets 0 to 4
    private static final int AFTER = 300; // accepted records after it, from offset 6 on

    @Test
    void noOffsetInTheStoreOrInKafkaPassesADeadLetterWhoseWriteFailed() throws Exception {
        // given: a consumer with a store, past the first records
        Setup s = new Setup("dl-ack-store");
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        AtomicInteger handled = new AtomicInteger();
        try (KafkaProducer<String, String> producer = producer();
                FencedConsumer<String, String> consumer =
                        s.consumer(handled).watermarkStore(store).build()) {
            CompletableFuture<Void> stopped = consumer.start();
            s.sendBefore(producer);
            await().atMost(Duration.ofSeconds(60))
                    .until(() ->
                            store.loadOffset(s.group, s.partition) == BEFORE && committed(s.group, s.topic) == BEFORE);

            // when: a refused record arrives whose dead-letter write fails, then many accepted ones
            s.sendRefusedThenAfter(producer);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone()
                            || store.loadOffset(s.group, s.partition) > BEFORE
                            || committed(s.group, s.topic) > BEFORE);

            // then: nothing passed the refused record, in the store or in Kafka; the consumer stopped at it,
            // having handled records after it in the same unit (no wait for the dead letter at each poll)
            assertThat(store.loadOffset(s.group, s.partition))
                    .as("offset in the store")
                    .isEqualTo(BEFORE);
            assertThat(committed(s.group, s.topic)).as("offset in Kafka").isEqualTo(BEFORE);
            s.assertStoppedAtTheRefusedRecord(stopped);
            assertThat(handled.get()).as("records handled").isGreaterThan(BEFORE);
        }
    }

    @Test
    void noOffsetInKafkaPassesADeadLetterWhoseWriteFailedWhenKafkaHoldsTheOnlyOffsets() throws Exception {
        // given: a consumer whose offsets are only in Kafka, past the first records
        Setup s = new Setup("dl-ack-kafka");
        AtomicInteger handled = new AtomicInteger();
        try (KafkaProducer<String, String> producer = producer();
                FencedConsumer<String, String> consumer =
                        s.consumer(handled).heapOnlyWatermarksLostOnRestart().build()) {
            CompletableFuture<Void> stopped = consumer.start();
            s.sendBefore(producer);
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(s.group, s.topic) == BEFORE);

            // when: a refused record arrives whose dead-letter write fails, then many accepted ones
            s.sendRefusedThenAfter(producer);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || committed(s.group, s.topic) > BEFORE);

            // then
            assertThat(committed(s.group, s.topic)).as("offset in Kafka").isEqualTo(BEFORE);
            s.assertStoppedAtTheRefusedRecord(stopped);
            assertThat(handled.get()).as("records handled").isGreaterThan(BEFORE);
        }
    }

    private static Throwable failure(CompletableFuture<Void> stopped) throws Exception {
        try {
            stopped.get(60, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    /** A topic of one partition, and its dead-letter topic, which refuses every dead letter as too large. */
    private static final class Setup {
        final String topic;
        final String deadLetterTopic;
        final TopicPartition partition;
        final String group;

        Setup(String prefix) throws Exception {
            topic = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
            deadLetterTopic = topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX;
            partition = new TopicPartition(topic, 0);
            group = newGroup(prefix);
            kafka().createTopic(topic, 1);
            try (Admin admin =
                    Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
                admin.createTopics(List.of(new NewTopic(deadLetterTopic, 1, (short) 1)
                                .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "64"))))
                        .all()
                        .get(30, TimeUnit.SECONDS);
            }
        }

        FencedConsumerBuilder<String, String> consumer(AtomicInteger handled) {
            Map<String, Object> config = consumerConfig(group);
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                    .properties(config)
                    .commitInterval(Duration.ofMillis(100))
                    .topics(topic)
                    .handler((record, token) -> handled.incrementAndGet());
        }

        void sendBefore(KafkaProducer<String, String> producer) {
            for (int i = 0; i < BEFORE; i++) {
                producer.send(FencedRecords.create(topic, "sku-1", "before " + i, 1));
            }
            producer.flush();
        }

        /** At offset {@link #BEFORE} a record without a token, then {@link #AFTER} accepted ones. */
        void sendRefusedThenAfter(KafkaProducer<String, String> producer) {
            producer.send(new ProducerRecord<>(topic, "sku-1", "no token"));
            for (int i = 0; i < AFTER; i++) {
                producer.send(FencedRecords.create(topic, "sku-1", "after " + i, 1));
            }
            producer.flush();
        }

        void assertStoppedAtTheRefusedRecord(CompletableFuture<Void> stopped) throws Exception {
            assertThat(failure(stopped))
                    .isInstanceOf(DeadLetterException.class)
                    .hasMessageContaining(topic + "-0 offset " + BEFORE + " to topic " + deadLetterTopic)
                    .hasMessageContaining("the write failed");
        }
    }
}
