package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A key-parallel consumer with a plain handler and {@link PostgresWatermarkStore}, restarted: the watermarks it
 * saved with its offsets (lazily loaded again after the restart) refuse a stale record, which the same
 * consumer without a durable store applies.
 */
class KeyParallelRestartIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_restart_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aRestartedKeyParallelConsumerRefusesAStaleRecordWhileOneWithoutADurableStoreAppliesIt() {
        String topic = newTopic("parallel-restart", 2);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 200; i++) {
                producer.send(FencedRecords.create(topic, "other-" + i, "x", 3));
            }
            sendFenced(producer, topic, "sku-1", "set 20", 7);
        }
        String durable = newGroup("parallel-restart");
        String heapOnly = newGroup("parallel-restart-heap");
        List<String> durableHandled = new CopyOnWriteArrayList<>();
        List<String> heapHandled = new CopyOnWriteArrayList<>();
        run(durable, topic, true, durableHandled, 201);
        run(heapOnly, topic, false, heapHandled, 201);

        // when: the paused ex-holder's write lands while both consumers are down, and both restart
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "set 11", 5);
        }
        run(durable, topic, true, durableHandled, 202);
        run(heapOnly, topic, false, heapHandled, 202);

        // then
        assertThat(durableHandled).contains("set 20").doesNotContain("set 11");
        assertThat(heapHandled).contains("set 20", "set 11");
        assertThat(KafkaFixture.size(topic + ".dlt")).isEqualTo(1);
    }

    private static void run(String group, String topic, boolean durable, List<String> handled, long until) {
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .maxConcurrency(8)
                .topics(topic)
                .handler((record, token) -> handled.add(record.value()));
        if (durable) {
            builder.watermarkStore(PostgresWatermarkStore.create(postgres.jdbi));
        } else {
            builder.heapOnlyWatermarksLostOnRestart();
        }
        try (FencedConsumer<String, String> consumer = builder.build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, topic) == until);
        }
    }
}
