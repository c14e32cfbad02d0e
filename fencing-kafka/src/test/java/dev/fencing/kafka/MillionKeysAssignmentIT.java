package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.internal.PartitionWatermarks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Defect 7: a partition whose store holds 1,000,000 keys. Assignment loads only the offset; each key's
 * watermark is loaded when one of its records arrives, and that is enough to refuse a stale record. Prints
 * the store work of an assignment both ways (a measurement for the report, never asserted).
 */
class MillionKeysAssignmentIT {
    private static final int KEYS = 1_000_000;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_million_keys_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aPartitionWithAMillionStoredKeysIsAssignedWithoutLoadingThemAndStillRefusesAStaleRecord() {
        // given: a million watermarks (token 10) and the offset of the records that set them
        String topic = newTopic("million", 1);
        String group = newGroup("million");
        postgres.jdbi.useHandle(h -> {
            h.createUpdate("INSERT INTO fencing.kafka_watermark (consumer_group, topic, kafka_partition, record_key,"
                            + " fence_token) SELECT :g, :t, 0, convert_to('key-' || i, 'UTF8'), 10"
                            + " FROM generate_series(1, :n) AS i")
                    .bind("g", group)
                    .bind("t", topic)
                    .bind("n", KEYS)
                    .execute();
            h.createUpdate("INSERT INTO fencing.kafka_offset (consumer_group, topic, kafka_partition, next_offset)"
                            + " VALUES (:g, :t, 0, 0)")
                    .bind("g", group)
                    .bind("t", topic)
                    .execute();
        });
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        measureAssignment(store, group, new TopicPartition(topic, 0));

        // when: a stale record of a stored key and a record of a new key arrive
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<String, String> producer = producer();
                FencedConsumer<String, String> consumer = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(consumerConfig(group))
                        .topics(topic)
                        .watermarkStore(store)
                        .handler((record, token) -> applied.add(record.key() + "@" + token))
                        .build()) {
            consumer.start();
            sendFenced(producer, topic, "key-7", "late", 5);
            sendFenced(producer, topic, "key-new", "first", 1);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> store.loadOffset(group, new TopicPartition(topic, 0)) == 2);

            // then: the stored watermark refused the stale record, and the heap holds the two keys seen, not a million
            assertThat(applied).containsExactly("key-new@1");
            await().atMost(Duration.ofSeconds(10)).until(() -> consumer.heldWatermarks() == 2);
        }
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, 1);
        assertThat(deadLetters).extracting(ConsumerRecord::value).containsExactly("late");
    }

    /**
     * What the rebalance callback costs with a million keys: all of them (the old way) or the offset only. The
     * old way takes many seconds, so it runs only with {@code -Dfencing.measure.assignment=true}.
     */
    private static void measureAssignment(PostgresWatermarkStore store, String group, TopicPartition partition) {
        if (!Boolean.getBoolean("fencing.measure.assignment")) {
            return;
        }
        long started = System.nanoTime();
        PartitionWatermarks eager =
                new PartitionWatermarks(store.load(group, partition).watermarks());
        long eagerNanos = System.nanoTime() - started;
        assertThat(eager.size()).isEqualTo(KEYS);
        started = System.nanoTime();
        long offset = store.loadOffset(group, partition);
        long lazyNanos = System.nanoTime() - started;
        assertThat(offset).isZero();
        System.out.printf(
                Locale.ROOT,
                "MEASURED 1,000,000-key partition assignment, store work in the rebalance callback:"
                        + " eager load of every watermark %d ms, lazy (offset only) %.1f ms%n",
                eagerNanos / 1_000_000,
                lazyNanos / 1e6);
    }
}
