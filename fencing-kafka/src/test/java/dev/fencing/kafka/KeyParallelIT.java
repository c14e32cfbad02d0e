package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static dev.fencing.kafka.KafkaFixture.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** The key-parallel consumer: per-key order under concurrency, the fence, back-pressure. */
class KeyParallelIT {

    @Test
    void eachKeysRecordsAreHandledInProducedOrderWithoutTheStaleOnesWhileKeysRunConcurrently() {
        // given: two passes over 2,000 keys in random order, each key a run of 1 to 3 records in a row (so a
        // key's records sit side by side and would run at once without its lane), tokens rising per pass, and
        // one record in 8 of the second pass a late one under token 1
        int keys = 2_000;
        String topic = newTopic("parallel-order", 4);
        long seed = System.nanoTime();
        Random random = new Random(seed);
        int records = 0;
        try (KafkaProducer<String, String> producer = producer()) {
            List<Integer> order = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                order.add(k);
            }
            for (int pass = 0; pass < 2; pass++) {
                Collections.shuffle(order, random);
                for (int k : order) {
                    for (int run = 1 + random.nextInt(3); run > 0; run--) {
                        long token = pass > 0 && random.nextInt(8) == 0 ? 1 : pass + 2;
                        producer.send(FencedRecords.create(topic, "key-" + k, "v" + records++, token));
                    }
                }
            }
            producer.flush();
        }
        int total = records;
        Map<String, List<String>> expected = new HashMap<>();
        Set<String> expectedStale = new HashSet<>();
        Map<String, Long> watermark = new HashMap<>();
        for (ConsumerRecord<String, String> record : readAll(topic, total)) {
            long t = token(record);
            if (t >= watermark.getOrDefault(record.key(), 0L)) {
                watermark.put(record.key(), t);
                expected.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
            } else {
                expectedStale.add(record.value());
            }
        }
        assertThat(expectedStale).as("seed %d", seed).hasSizeGreaterThan(200);

        // when: 32 workers, each record waiting a random 0 to 2 ms
        Map<String, List<String>> handled = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> runningPerKey = new ConcurrentHashMap<>();
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostRunning = new AtomicInteger();
        AtomicInteger mostRunningOfOneKey = new AtomicInteger();
        String group = newGroup("parallel-order");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .maxConcurrency(32)
                .topics(topic)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> {
                    int now = running.incrementAndGet();
                    mostRunning.accumulateAndGet(now, Math::max);
                    int ofKey = runningPerKey
                            .computeIfAbsent(record.key(), k -> new AtomicInteger())
                            .incrementAndGet();
                    mostRunningOfOneKey.accumulateAndGet(ofKey, Math::max);
                    sleepMicros(ThreadLocalRandom.current().nextInt(2_000));
                    handled.computeIfAbsent(record.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                            .add(record.value());
                    runningPerKey.get(record.key()).decrementAndGet();
                    running.decrementAndGet();
                })
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(90)).until(() -> committed(group, topic) == total);
        }

        // then: each key's records in produced order minus the stale ones; keys ran concurrently, one key never
        assertThat(handled).as("seed %d", seed).isEqualTo(expected);
        assertThat(mostRunningOfOneKey.get()).isEqualTo(1);
        assertThat(mostRunning.get()).isGreaterThan(4);
        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter : readAll(topic + ".dlt", expectedStale.size())) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            deadLettered.add(deadLetter.value());
        }
        assertThat(deadLettered).isEqualTo(expectedStale);
    }

    @Test
    void staleRecordAfterAFresherOneIsDeadLetteredByTheKeyParallelConsumerWhileAnUnfencedLoopAppliesIt() {
        // given: holder 5 writes, holder 7 takes over, holder 5's paused write lands; 300 other keys around them
        String topic = newTopic("parallel-stale", 2);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 300; i++) {
                producer.send(FencedRecords.create(topic, "other-" + i, "x", 3));
            }
            sendFenced(producer, topic, "sku-1", "set 10", 5);
            sendFenced(producer, topic, "sku-1", "set 20", 7);
            sendFenced(producer, topic, "sku-1", "set 11", 5);
        }

        // without the fence: a plain loop applies every record, and the stale write wins
        Map<String, String> unfenced = new HashMap<>();
        for (ConsumerRecord<String, String> record : readAll(topic, 303)) {
            unfenced.put(record.key(), record.value());
        }
        assertThat(unfenced).containsEntry("sku-1", "set 11");

        // with the key-parallel consumer
        Map<String, String> fenced = new ConcurrentHashMap<>();
        String group = newGroup("parallel-stale");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .maxConcurrency(16)
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    sleepMicros(ThreadLocalRandom.current().nextInt(1_000));
                    fenced.put(record.key(), record.value());
                })
                .build()) {
            consumer.start();
            List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 303);

            assertThat(deadLetters).hasSize(1);
            assertThat(deadLetters.get(0).value()).isEqualTo("set 11");
            assertThat(header(deadLetters.get(0), DeadLetterHeaders.DETAIL))
                    .isEqualTo("token 5 is older than watermark 7 of key sku-1");
        }
        assertThat(fenced).containsEntry("sku-1", "set 20").hasSize(301);
    }

    @Test
    void aFullPartitionIsPausedWhileTheConsumerKeepsPollingAndStaysInTheGroup() {
        // given: 1,200 records of 300 keys in one partition, 15 ms of work each on 4 workers: 4.5 s in all,
        // longer than max.poll.interval.ms
        int records = 1_200;
        String topic = newTopic("parallel-pause", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < records; i++) {
                producer.send(FencedRecords.create(topic, "key-" + (i % 300), "v" + i, 1 + i / 300));
            }
            producer.flush();
        }
        Map<String, Integer> handled = new ConcurrentHashMap<>();
        AtomicInteger mostInFlight = new AtomicInteger();
        String group = newGroup("parallel-pause");
        Map<String, Object> config = consumerConfig(group);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
        config.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2_000);
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .maxInFlightPerPartition(50)
                .topics(topic)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> {
                    sleepMicros(15_000);
                    handled.merge(record.value(), 1, Integer::sum);
                })
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> {
                        mostInFlight.accumulateAndGet(consumer.recordsInFlight(), Math::max);
                        return committed(group, topic) == records;
                    });
        }

        // then: never more than the limit and one poll held; every record handled once (no rebalance replayed any)
        assertThat(mostInFlight.get()).isBetween(30, 50 + 20);
        assertThat(handled).hasSize(records);
        assertThat(handled.values()).containsOnly(1);
    }

    static void sleepMicros(long micros) {
        try {
            Thread.sleep(micros / 1_000, (int) (micros % 1_000) * 1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
