package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** Issue test 2: two producers interleave on the same keys; per key the handled tokens never go back. */
class InterleavedProducersIT {
    private static final int KEYS = 8;
    private static final int ROUNDS = 12;

    @Test
    void handledTokensNeverGoBackwardsPerKeyWhenTwoProducersInterleave() throws Exception {
        // given: per key a lock whose grants count up; two producers take turns holding it
        String topic = newTopic("interleaved", 3);
        Map<String, AtomicLong> grants = new ConcurrentHashMap<>();
        for (int k = 0; k < KEYS; k++) {
            grants.put("key-" + k, new AtomicLong());
        }
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (KafkaProducer<String, String> a = producer();
                KafkaProducer<String, String> b = producer()) {
            for (int round = 0; round < ROUNDS; round++) {
                List<Future<?>> done = new ArrayList<>();
                for (String key : grants.keySet()) {
                    // the paused holder took its grant first, the new holder the next one; the paused one publishes
                    // last
                    KafkaProducer<String, String> paused = round % 2 == 0 ? a : b;
                    KafkaProducer<String, String> fresh = round % 2 == 0 ? b : a;
                    long old = grants.get(key).incrementAndGet();
                    long current = grants.get(key).incrementAndGet();
                    CountDownLatch freshWritten = new CountDownLatch(1);
                    String r = Integer.toString(round);
                    done.add(pool.submit(() -> {
                        KafkaFixture.sendFenced(fresh, topic, key, "fresh-" + r + "-1", current);
                        KafkaFixture.sendFenced(fresh, topic, key, "fresh-" + r + "-2", current);
                        freshWritten.countDown();
                    }));
                    done.add(pool.submit(() -> {
                        awaitLatch(freshWritten);
                        KafkaFixture.sendFenced(paused, topic, key, "late-" + r, old);
                    }));
                }
                // a free-running round too: both publish at once under their own grants
                for (String key : grants.keySet()) {
                    long first = grants.get(key).incrementAndGet();
                    long second = grants.get(key).incrementAndGet();
                    String r = Integer.toString(round);
                    done.add(pool.submit(() -> KafkaFixture.sendFenced(a, topic, key, "race-a-" + r, first)));
                    done.add(pool.submit(() -> KafkaFixture.sendFenced(b, topic, key, "race-b-" + r, second)));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdownNow();
        }
        List<ConsumerRecord<String, String>> log = readAll(topic, KEYS * ROUNDS * 5);
        assertThat(log).hasSize(KEYS * ROUNDS * 5);

        // without the filter: in log order, some key's tokens go backwards
        assertThat(someKeyGoesBackwards(log)).isTrue();

        // when
        Map<String, List<Long>> handled = new ConcurrentHashMap<>();
        Set<Long> handledOffsets = ConcurrentHashMap.newKeySet();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String group = newGroup("interleaved");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .meterRegistry(registry)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    handled.computeIfAbsent(record.key(), k -> new ArrayList<>())
                            .add(token);
                    handledOffsets.add(record.partition() * 1_000_000L + record.offset());
                })
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> registry.find("fencing.kafka.records.accepted").counters().stream()
                                            .mapToDouble(c -> c.count())
                                            .sum()
                                    + registry.find("fencing.kafka.records.dead.lettered").counters().stream()
                                            .mapToDouble(c -> c.count())
                                            .sum()
                            == log.size());
        }

        // then: per key non-decreasing, and exactly the records a sequential fence accepts
        assertThat(handled).hasSize(KEYS);
        handled.forEach((key, tokens) -> assertThat(tokens).as(key).isSorted());
        Set<Long> expected = new HashSet<>();
        Map<String, Long> watermark = new HashMap<>();
        for (ConsumerRecord<String, String> record : log) {
            long t = token(record);
            if (t >= watermark.getOrDefault(record.key(), 0L)) {
                watermark.put(record.key(), t);
                expected.add(record.partition() * 1_000_000L + record.offset());
            }
        }
        assertThat(handledOffsets).isEqualTo(expected);
        assertThat(log.size() - expected.size()).as("stale records").isGreaterThanOrEqualTo(KEYS * ROUNDS);
        assertThat(readAll(topic + ".dlt", log.size() - expected.size())).hasSize(log.size() - expected.size());
    }

    private static boolean someKeyGoesBackwards(List<ConsumerRecord<String, String>> log) {
        Map<String, Long> last = new HashMap<>();
        for (ConsumerRecord<String, String> record : log) {
            Long previous = last.put(record.key(), token(record));
            if (previous != null && token(record) < previous) {
                return true;
            }
        }
        return false;
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the fresh holder did not publish within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
