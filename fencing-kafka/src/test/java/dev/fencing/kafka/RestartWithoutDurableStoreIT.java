package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Defect 1: consumer A applies {@code r1@20} and stops; a late {@code r1@15} arrives; consumer B of the same
 * group starts. With the heap-only opt-in B has forgotten token 20 and applies the stale record (the loss its
 * javadoc documents); with the durable store B refuses it.
 */
class RestartWithoutDurableStoreIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_restart_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void heapOnlyConsumerAppliesAStaleRecordAfterARestartWhileTheDurableStoreRefusesIt() {
        List<String> heapOnly = restartAroundALateRecord(FencedConsumerBuilder::heapOnlyWatermarksLostOnRestart);
        assertThat(heapOnly).containsExactly("fresh@20", "late@15"); // the documented loss

        List<String> durable = restartAroundALateRecord(
                builder -> builder.watermarkStore(PostgresWatermarkStore.create(postgres.jdbi)));
        assertThat(durable).containsExactly("fresh@20");
    }

    /** What the two consumer runs applied, in order. */
    private static List<String> restartAroundALateRecord(
            UnaryOperator<FencedConsumerBuilder<String, String>> watermarks) {
        String topic = newTopic("restart", 1);
        String group = newGroup("restart");
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "r1", "fresh", 20);
            runUntilCommitted(watermarks, topic, group, applied, 1);
            sendFenced(producer, topic, "r1", "late", 15);
            runUntilCommitted(watermarks, topic, group, applied, 2);
        }
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, 0);
        assertThat(deadLetters).hasSize(applied.contains("late@15") ? 0 : 1);
        return applied;
    }

    private static void runUntilCommitted(
            UnaryOperator<FencedConsumerBuilder<String, String>> watermarks,
            String topic,
            String group,
            List<String> applied,
            long offset) {
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .handler((record, token) -> applied.add(record.value() + "@" + token));
        try (FencedConsumer<String, String> consumer = watermarks.apply(builder).build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == offset);
        }
    }
}
