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

import dev.fencing.FencePolicy;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** Issue test 1: the stale record after a fresher one, with and without the fence. */
class StaleRecordIT {

    @Test
    void staleRecordAfterAFresherOneIsDeadLetteredWhileAnUnfencedLoopAppliesIt() {
        // given: holder with token 5 writes, loses the lock to token 7, then its paused write lands
        String topic = newTopic("stale", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "set 10", 5);
            sendFenced(producer, topic, "sku-1", "set 20", 7);
            sendFenced(producer, topic, "sku-1", "set 11", 5);
        }

        // without the filter: a plain loop applies every record in order, and the stale write wins
        Map<String, String> unfenced = new HashMap<>();
        for (ConsumerRecord<String, String> record : readAll(topic, 3)) {
            unfenced.put(record.key(), record.value());
        }
        assertThat(unfenced).containsEntry("sku-1", "set 11");

        // with the filter
        Map<String, String> fenced = Collections.synchronizedMap(new HashMap<>());
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String group = newGroup("stale");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .meterRegistry(registry)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    handled.add(record.value() + "@" + token);
                    fenced.put(record.key(), record.value());
                })
                .build()) {
            consumer.start();
            List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);

            // then
            assertThat(deadLetters).hasSize(1);
            ConsumerRecord<String, String> deadLetter = deadLetters.get(0);
            assertThat(deadLetter.key()).isEqualTo("sku-1");
            assertThat(deadLetter.value()).isEqualTo("set 11");
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            assertThat(header(deadLetter, DeadLetterHeaders.DETAIL))
                    .isEqualTo("token 5 is older than watermark 7 of key sku-1");
            assertThat(header(deadLetter, DeadLetterHeaders.ORIGIN_TOPIC)).isEqualTo(topic);
            assertThat(header(deadLetter, DeadLetterHeaders.ORIGIN_PARTITION)).isEqualTo("0");
            assertThat(header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET)).isEqualTo("2");
            assertThat(header(deadLetter, DeadLetterHeaders.GROUP)).isEqualTo(group);
            assertThat(FenceTokenHeader.read(deadLetter.headers())).isEqualTo(5);
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 3);
        }
        assertThat(handled).containsExactly("set 10@5", "set 20@7");
        assertThat(fenced).containsEntry("sku-1", "set 20");
        assertThat(registry.get("fencing.kafka.records.accepted").counter().count())
                .isEqualTo(2);
        assertThat(registry.get("fencing.kafka.records.dead.lettered")
                        .tag("reason", "STALE_TOKEN")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void theFirstDeadLetterDoesNotWaitForTheDeadLetterProducersMetadata() throws Exception {
        String topic = newTopic("first-dead-letter", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "fresh", 7);
        }
        String group = newGroup("first-dead-letter");
        Map<String, Object> config = consumerConfig(group);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, group);
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        // the dead-letter producer's total time waiting for topic metadata, sends and metadata requests alike
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        ObjectName metrics =
                new ObjectName("kafka.producer:type=producer-metrics,client-id=" + group + "-dead-letters");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() == 1);
            double waitedAtStart = (double) jmx.getAttribute(metrics, "metadata-wait-time-ns-total");

            try (KafkaProducer<String, String> producer = producer()) {
                sendFenced(producer, topic, "sku-1", "stale", 5);
            }
            assertThat(readAll(topic + ".dlt", 1)).hasSize(1);

            // the metadata was fetched when the loop started; the dead letter's send found it there
            assertThat(waitedAtStart).isPositive();
            assertThat((double) jmx.getAttribute(metrics, "metadata-wait-time-ns-total"))
                    .isEqualTo(waitedAtStart);
        }
    }

    @Test
    void aUnitThatEndsFlushesItsDeadLettersInsteadOfWaitingOutTheProducersLinger() {
        awaitedDeadLettersAreFlushed(1);
    }

    @Test
    void aKeyParallelWorkerFlushesItsDeadLetterInsteadOfWaitingOutALingerSetForTheProducer() {
        awaitedDeadLettersAreFlushed(4);
    }

    private void awaitedDeadLettersAreFlushed(int maxConcurrency) {
        String topic = newTopic("dead-letter-linger", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "fresh", 7);
            sendFenced(producer, topic, "sku-1", "stale", 5);
            sendFenced(producer, topic, "sku-1", "fresher", 8);
        }
        String group = newGroup("dead-letter-linger");
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                // a linger far past the dead-letter timeout: a wait for an ack that sat it out would fail
                .property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "linger.ms", "600000")
                .property(FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG, "3000")
                .maxConcurrency(maxConcurrency)
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            var stopped = consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> stopped.isDone() || committed(group, topic) == 3);

            assertThat(stopped).as("the consumer, still running").isNotDone();
            assertThat(committed(group, topic)).isEqualTo(3);
            assertThat(readAll(topic + ".dlt", 1))
                    .extracting(ConsumerRecord::value)
                    .containsExactly("stale");
        }
        assertThat(handled).containsExactly("fresh", "fresher");
    }

    @Test
    void noDeadLetterFlushThreadOutlivesAConsumerWhoseLoopWasInterrupted() throws Exception {
        String topic = newTopic("flush-thread", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "fresh", 7);
            sendFenced(producer, topic, "sku-1", "stale", 5);
        }
        String group = newGroup("flush-thread");
        Map<String, Object> config = consumerConfig(group);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, group);
        String flushThread = group + "-dead-letters-flush";
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                // lingering, so that the unit's end flushes: the flush thread runs
                .property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "linger.ms", "600000")
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {})
                .build()) {
            var stopped = consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 2);
            assertThat(threadsNamed(flushThread))
                    .as("the flush thread, after the unit's end")
                    .isNotEmpty();

            // an interrupted loop fails, and closing its dead-letter producer throws (having closed it)
            threadsNamed(group).forEach(Thread::interrupt);
            await().atMost(Duration.ofSeconds(30)).until(stopped::isDone);
            assertThat(consumer.state()).isEqualTo(ConsumerState.FAILED);
        }
        await().atMost(Duration.ofSeconds(10))
                .until(() -> threadsNamed(flushThread).isEmpty());
    }

    private static List<Thread> threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(name) && t.isAlive())
                .toList();
    }

    @Test
    void equalTokensAreAcceptedByDefaultAndRefusedInStrictMode() {
        String topic = newTopic("equal", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "first", 4);
            sendFenced(producer, topic, "sku-1", "second", 4);
            sendFenced(producer, topic, "sku-1", "third", 5);
        }

        List<String> lenient = handle(topic, false, 3);
        List<String> strict = handle(topic, true, 2);

        assertThat(lenient).containsExactly("first", "second", "third");
        assertThat(strict).containsExactly("first", "third");
    }

    @Test
    void dropPolicyCountsStaleRecordsWithoutDeadLetteringThem() {
        String topic = newTopic("drop", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "new", 9);
            sendFenced(producer, topic, "sku-1", "old", 8);
            sendFenced(producer, topic, "sku-1", "newer", 10);
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("drop");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .property(FencedConsumerConfig.STALE_RECORDS_CONFIG, "drop")
                .topics(topic)
                .meterRegistry(registry)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 3);
        }
        assertThat(handled).containsExactly("new", "newer");
        assertThat(registry.get("fencing.kafka.records.dropped").counter().count())
                .isEqualTo(1);
        assertThat(KafkaFixture.size(topic + ".dlt")).isZero();
    }

    private static List<String> handle(String topic, boolean strict, int expectedHandled) {
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("equal");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .fencePolicy(strict ? FencePolicy.STRICT : FencePolicy.MONOTONIC)
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 3);
        }
        assertThat(handled).hasSize(expectedHandled);
        return handled;
    }
}
