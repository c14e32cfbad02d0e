package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Issue test 4: two consumers in one group; one leaves and rejoins; the watermarks follow their partitions. */
class RebalanceIT {
    private static final int KEYS = 40;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rebalance_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void watermarksFollowTheirPartitionsWhenAConsumerLeavesAndRejoins() {
        String topic = newTopic("rebalance", 4);
        String group = newGroup("rebalance");
        Map<String, List<Long>> handled = new ConcurrentHashMap<>();
        Map<String, String> handledBy = new ConcurrentHashMap<>();
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        try (KafkaProducer<String, String> producer = producer()) {
            // given: both members own two partitions each and have accepted token 10 for every key
            FencedConsumer<String, String> a = consumer(group, topic, store, "a", handled, handledBy);
            FencedConsumer<String, String> b = consumer(group, topic, store, "b", handled, handledBy);
            try (a) {
                a.start();
                b.start();
                await().atMost(Duration.ofSeconds(60))
                        .until(() ->
                                a.assignment().size() == 2 && b.assignment().size() == 2);
                publishAll(producer, topic, 10);
                await().atMost(Duration.ofSeconds(60)).until(() -> total(handled) == KEYS);
                assertThat(handledBy.values()).contains("a", "b");

                // when: b leaves; a takes b's partitions and must refuse token 5 for b's keys too
                b.close();
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> a.assignment().size() == 4);
                // the store is read lazily: a's heap holds b's keys only once their records arrive
                publishAll(producer, topic, 5);
                await().atMost(Duration.ofSeconds(60)).until(() -> KafkaFixture.size(topic + ".dlt") == KEYS);
                assertThat(a.heldWatermarks()).isEqualTo(KEYS);

                // when: b rejoins as a new member; each side must refuse token 9 and accept 11 for the keys it now owns
                handledBy.clear();
                try (FencedConsumer<String, String> b2 = consumer(group, topic, store, "b2", handled, handledBy)) {
                    b2.start();
                    await().atMost(Duration.ofSeconds(60))
                            .until(() -> a.assignment().size() == 2
                                    && b2.assignment().size() == 2);
                    publishAll(producer, topic, 9);
                    publishAll(producer, topic, 11);
                    await().atMost(Duration.ofSeconds(60)).until(() -> total(handled) == 2 * KEYS);
                    await().atMost(Duration.ofSeconds(60)).until(() -> KafkaFixture.size(topic + ".dlt") == 2 * KEYS);
                    // each member holds the keys of the partitions it owns now, and a dropped those it gave away
                    assertThat(a.heldWatermarks() + b2.heldWatermarks()).isEqualTo(KEYS);
                    assertThat(b2.heldWatermarks()).isPositive();
                    assertThat(handledBy.values()).contains("a", "b2");
                }
            }
        }

        // then: every key saw 10 then 11, never 5 or 9, whichever member owned it when
        assertThat(handled).hasSize(KEYS);
        handled.forEach((key, tokens) -> assertThat(tokens).as(key).containsExactly(10L, 11L));
    }

    private static FencedConsumer<String, String> consumer(
            String group,
            String topic,
            PostgresWatermarkStore store,
            String name,
            Map<String, List<Long>> handled,
            Map<String, String> handledBy) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .property("client.id", group + "-" + name)
                .topics(topic)
                .watermarkStore(store)
                .handler((record, token) -> {
                    handled.computeIfAbsent(record.key(), k -> new ArrayList<>())
                            .add(token);
                    handledBy.put(record.key(), name);
                })
                .build();
    }

    private static void publishAll(KafkaProducer<String, String> producer, String topic, long token) {
        for (int k = 0; k < KEYS; k++) {
            producer.send(FencedRecords.create(topic, "key-" + k, "t" + token, token));
        }
        producer.flush();
    }

    private static int total(Map<String, List<Long>> handled) {
        return handled.values().stream().mapToInt(List::size).sum();
    }
}
