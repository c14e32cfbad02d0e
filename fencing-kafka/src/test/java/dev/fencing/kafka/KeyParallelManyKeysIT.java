package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Memory of the key-parallel consumer with many distinct keys: its lanes and offsets hold only the records
 * in flight, and its watermarks at most about {@code watermarkCacheMaxKeys} per partition (a partition
 * holding more is paused until idle and its watermarks dropped from the heap; the store has them), whatever
 * the number of keys. 150,000 keys here against a cache of 5,000 and 500 records in flight per partition.
 */
class KeyParallelManyKeysIT {
    private static final int KEYS = 150_000;
    private static final int CACHE = 5_000;
    private static final int IN_FLIGHT = 500;

    @Test
    void heldWatermarksAndRecordsStayBoundedWhileEveryOneOfManyKeysIsHandledAndAnEvictedKeyStillRefusesAStaleRecord() {
        String topic = newTopic("parallel-many-keys", 2);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < KEYS; i++) {
                producer.send(FencedRecords.create(topic, "key-" + i, "v", 2));
            }
            producer.flush();
        }
        String group = newGroup("parallel-many-keys");
        LongAdder handled = new LongAdder();
        AtomicInteger mostWatermarks = new AtomicInteger();
        AtomicInteger mostInFlight = new AtomicInteger();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .maxConcurrency(16)
                .maxInFlightPerPartition(IN_FLIGHT)
                .watermarkCacheMaxKeys(CACHE)
                .topics(topic)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> handled.increment())
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        mostWatermarks.accumulateAndGet(consumer.heldWatermarks(), Math::max);
                        mostInFlight.accumulateAndGet(consumer.recordsInFlight(), Math::max);
                        return committed(group, topic) == KEYS;
                    });

            // then: bounded per partition by the cache plus what was in flight and one poll (500 records)
            assertThat(handled.sum()).isEqualTo(KEYS);
            assertThat(mostWatermarks.get()).isPositive().isLessThanOrEqualTo(2 * (CACHE + IN_FLIGHT + 500));
            assertThat(mostInFlight.get()).isLessThanOrEqualTo(2 * (IN_FLIGHT + 500));

            // and key-0, whose watermark left the heap long ago, refuses a stale record: the store had it
            try (KafkaProducer<String, String> producer = producer()) {
                sendFenced(producer, topic, "key-0", "late", 1);
            }
            List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
            assertThat(deadLetters).hasSize(1);
            assertThat(header(deadLetters.get(0), DeadLetterHeaders.DETAIL))
                    .isEqualTo("token 1 is older than watermark 2 of key key-0");
        }
        assertThat(handled.sum()).isEqualTo(KEYS);
    }
}
