package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Edge cases of the key-parallel mode, each one a hole found in review and closed since. */
class KeyParallelEdgeCasesIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_edges_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /**
     * close() is "safe to call from any thread, including from the handler". A key-parallel handler runs on a
     * worker whose record the poll thread's drain waits for: close() from there must not wait for the poll
     * thread (it used to wait out the whole close timeout).
     */
    @Test
    void closeCalledFromAHandlerReturnsWithoutWaitingForItself() {
        String topic = newTopic("edges-close", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 20; i++) {
                producer.send(FencedRecords.create(topic, "key-" + i, "v" + i, 1));
            }
            producer.flush();
        }
        AtomicReference<FencedConsumer<String, String>> self = new AtomicReference<>();
        AtomicLong closeMillis = new AtomicLong(-1);
        CountDownLatch closed = new CountDownLatch(1);
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(newGroup("edges-close")))
                .maxConcurrency(4)
                .closeTimeout(Duration.ofSeconds(6))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    if (record.value().equals("v0")) {
                        long start = System.nanoTime();
                        self.get().close(); // e.g. "stop after this record"
                        closeMillis.set((System.nanoTime() - start) / 1_000_000);
                        closed.countDown();
                    }
                })
                .build();
        self.set(consumer);
        consumer.start();
        try {
            assertThat(closed.await(60, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.out.println("close() from a key-parallel handler took " + closeMillis.get() + " ms");
        assertThat(closeMillis.get()).as("close() from the handler, ms").isLessThan(2_000);
    }

    /**
     * A partition paused for back-pressure whose store commit finds another member's offset (reset) is read
     * again from the store, and resumed in Kafka (it used to stay paused for good).
     */
    @Test
    void aPartitionResetWhilePausedIsResumedAndReadAgain() throws Exception {
        String topic = newTopic("edges-reset", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 100; i++) {
                String key = i == 0 ? "slow-a" : i == 10 ? "slow-b" : "k-" + i;
                producer.send(FencedRecords.create(topic, key, Integer.toString(i), 1));
            }
            producer.flush();
        }
        String group = newGroup("edges-reset");
        CountDownLatch releaseA = new CountDownLatch(1);
        CountDownLatch releaseB = new CountDownLatch(1);
        Map<Integer, AtomicInteger> handled = new ConcurrentHashMap<>();
        Map<String, Object> config = consumerConfig(group);
        config.put("max.poll.records", 500);
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .maxInFlightPerPartition(20)
                .commitInterval(Duration.ofMillis(200))
                .closeTimeout(Duration.ofSeconds(10))
                .topics(topic)
                .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                .handler((record, token) -> {
                    try {
                        if (record.key().equals("slow-a")) {
                            releaseA.await(60, TimeUnit.SECONDS);
                        } else if (record.key().equals("slow-b")) {
                            releaseB.await(60, TimeUnit.SECONDS);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    handled.computeIfAbsent(Integer.parseInt(record.value()), k -> new AtomicInteger())
                            .incrementAndGet();
                })
                .build()) {
            consumer.start();
            // all but the two slow ones handled, the partition holds 100 >= 20 (paused), offset 0 stored
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> handled.size() == 98 && Long.valueOf(0).equals(stored(group)));
            // another member commits the partition meanwhile (what a zombie overlap looks like to this one)
            postgres.jdbi.useHandle(
                    h -> h.execute("UPDATE fencing.kafka_offset SET next_offset = 30 WHERE consumer_group = ?", group));
            releaseA.countDown(); // frontier -> 10, still 90 held: stays paused; the commit finds 30 -> reset
            Thread.sleep(1_000);
            releaseB.countDown(); // lets reset's drain finish
            // then: the partition is read again from 30 and runs to the end
            try {
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> Long.valueOf(100).equals(stored(group)));
            } finally {
                System.out.println("reset: stored offset " + stored(group) + ", record 50 handled " + handled.get(50)
                        + " times, in flight " + consumer.recordsInFlight());
            }
        }
    }

    /**
     * A partition whose store commit finds another member's offset (taken over) starts none of its queued records
     * any more: the new owner reads them from its own offset. Record b-2 waits behind b-1, running, when the
     * commit that finds the other member's offset resets the partition; b-1 then finishes. The reset used to
     * wait for the records queued too, so b-2 started after it and was handled a second time (with a plain handler
     * its effect is not fenced by anything).
     */
    @Test
    void aPartitionTakenOverStartsNoneOfItsQueuedRecords() throws Exception {
        String topic = newTopic("edges-taken-over", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "a", "a-1", 1));
            producer.send(FencedRecords.create(topic, "b", "b-1", 1));
            producer.send(FencedRecords.create(topic, "b", "b-2", 1));
            producer.flush();
        }
        String group = newGroup("edges-taken-over");
        CountDownLatch releaseA = new CountDownLatch(1);
        CountDownLatch releaseB = new CountDownLatch(1);
        Set<String> started = ConcurrentHashMap.newKeySet();
        Map<String, Object> config = consumerConfig(group);
        config.put("client.id", group + "-a");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .commitInterval(Duration.ofMillis(200))
                .closeTimeout(Duration.ofSeconds(20))
                .topics(topic)
                .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                .handler((record, token) -> {
                    started.add(record.value());
                    try {
                        if (record.value().equals("a-1")) {
                            releaseA.await(60, TimeUnit.SECONDS);
                        } else if (record.value().equals("b-1")) {
                            releaseB.await(60, TimeUnit.SECONDS);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                })
                .build()) {
            try {
                consumer.start();
                // a-1 and b-1 running, b-2 queued behind b-1; offset 0 stored
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> started.containsAll(Set.of("a-1", "b-1"))
                                && Long.valueOf(0).equals(stored(group)));
                // another member commits the partition meanwhile (what a zombie overlap looks like to this one)
                // (through b-2: an offset past the log's end would be out of range, and the consumer would read the
                // partition again from its beginning, auto.offset.reset=earliest)
                postgres.jdbi.useHandle(h ->
                        h.execute("UPDATE fencing.kafka_offset SET next_offset = 3 WHERE consumer_group = ?", group));
                releaseA.countDown(); // frontier -> 1: the commit finds 3, and the partition is reset
                await().atMost(Duration.ofSeconds(60)).until(() -> resetting(consumer.clientId()));
                releaseB.countDown(); // b-1 finishes while the reset waits
                await().atMost(Duration.ofSeconds(60)).until(() -> !resetting(consumer.clientId()));
                assertThat(started).as("records started").containsExactlyInAnyOrder("a-1", "b-1");
                assertThat(consumer.failure()).as("the consumer's failure").isNull();
            } finally {
                releaseA.countDown();
                releaseB.countDown();
            }
        }
    }

    /** Whether the consumer's poll thread (named after its client id) is resetting a partition taken over now. */
    private static boolean resetting(String clientId) {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().equals(clientId))
                .flatMap(e -> Arrays.stream(e.getValue()))
                .anyMatch(frame -> frame.getClassName().endsWith("KeyParallelRunner")
                        && frame.getMethodName().equals("reset"));
    }

    @SuppressWarnings("unchecked")
    static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
        throw (E) e; // what a Kotlin, Scala or Groovy handler, or Lombok's @SneakyThrows, does with an IOException
    }

    /**
     * A handler that throws a checked exception (legal on the JVM: Kotlin, Scala, Groovy, @SneakyThrows) stops the
     * consumer, as in the serial consumer, with nothing from the failed record on committed and the key's next
     * record never run (it used to kill the worker thread and leave the consumer stuck, running).
     */
    @Test
    void aCheckedExceptionThrownSneakilyByAHandlerStopsTheConsumer() throws Exception {
        String topic = newTopic("edges-sneaky", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "sku-a", "a1", 5));
            for (int i = 0; i < 50; i++) {
                producer.send(FencedRecords.create(topic, "other-" + i, "o" + i, 5));
            }
            producer.send(FencedRecords.create(topic, "sku-a", "a2", 5));
            producer.flush();
        }
        String group = newGroup("edges-sneaky");
        Set<String> handled = ConcurrentHashMap.newKeySet();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .maxConcurrency(4)
                .closeTimeout(Duration.ofSeconds(3))
                .topics(topic)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> {
                    if (record.value().equals("a1")) {
                        sneakyThrow(new java.io.IOException("inventory service unreachable"));
                    }
                    handled.add(record.value());
                })
                .build()) {
            java.util.concurrent.CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(stopped::isDone);
            assertThat(stopped)
                    .as("the consumer stops on the handler's failure, as the serial one does")
                    .isCompletedExceptionally();
            assertThatThrownBy(stopped::join)
                    .hasCauseInstanceOf(RecordHandlingException.class)
                    .hasRootCauseInstanceOf(java.io.IOException.class);
            assertThat(handled).as("the failed key's next record").doesNotContain("a2");
            assertThat(KafkaFixture.committed(group, topic))
                    .as("nothing from the failed record on is committed")
                    .isZero();
        }
    }

    /**
     * What a SIGKILL would replay (records handled past the stored offset, sampled) stays near the in-flight
     * window: progress is saved as soon as it runs a window ahead, not only every commit interval (it used to
     * reach a commit interval's worth of records, 2,000 to 3,000 here).
     */
    @Test
    void whatACrashWouldReplayStaysNearTheInFlightWindow() throws Exception {
        String topic = newTopic("edges-replay", 1);
        int records = 6_000;
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < records; i++) {
                producer.send(FencedRecords.create(topic, "key-" + (i % 1_000), Integer.toString(i), 1));
            }
            producer.flush();
        }
        String group = newGroup("edges-replay");
        AtomicInteger handled = new AtomicInteger();
        Map<String, Object> config = consumerConfig(group);
        config.put("max.poll.records", 20);
        long maxLag = 0;
        int maxHeld = 0;
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(8)
                .maxInFlightPerPartition(20)
                .topics(topic)
                .watermarkStore(PostgresWatermarkStore.create(postgres.jdbi))
                .handler((record, token) -> {
                    KeyParallelIT.sleepMicros(300);
                    handled.incrementAndGet();
                })
                .build()) {
            consumer.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (handled.get() < records && System.nanoTime() < deadline) {
                int h = handled.get();
                Long s = stored(group);
                maxLag = Math.max(maxLag, h - (s == null ? 0 : s));
                maxHeld = Math.max(maxHeld, consumer.recordsInFlight());
                Thread.sleep(10);
            }
        }
        System.out.println("replay: max records handled past the stored offset " + maxLag
                + " (locked bound 20 + one poll of 20), max records held " + maxHeld);
        // the window (20), records finished above the frontier meanwhile (the window again), a few polls of 20
        assertThat(maxLag).as("records a SIGKILL would replay").isLessThanOrEqualTo(100);
    }

    /**
     * A plain handler stalled (GC, blocking I/O that ignores interrupts) during a rebalance: the revocation waits
     * for it (up to max.poll.interval.ms, as the serial consumer keeps its partition), so its write lands before
     * the new owner's newer one. It used to give up after twice the close timeout, and the stalled, older write
     * landed last.
     */
    @Test
    void aStalledPlainHandlerOfARevokedPartitionFinishesBeforeTheNewOwnerTakesOver() throws Exception {
        String topic = newTopic("edges-stall", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "sku-1", "v5", 5));
            for (int i = 0; i < 20; i++) {
                producer.send(FencedRecords.create(topic, "other-" + i, "x", 1));
            }
            producer.send(FencedRecords.create(topic, "sku-1", "v6", 6));
            producer.flush();
        }
        String group = newGroup("edges-stall");
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        Map<String, String> resource = new ConcurrentHashMap<>();
        java.util.List<String> log = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        CountDownLatch stalled = new CountDownLatch(1);
        CountDownLatch stallOver = new CountDownLatch(1);
        FencedConsumer<String, String> a = stallConsumer(group, topic, store, "a", resource, log, stalled, stallOver);
        FencedConsumer<String, String> b = stallConsumer(group, topic, store, "b", resource, log, null, null);
        try {
            a.start();
            assertThat(stalled.await(60, TimeUnit.SECONDS)).isTrue();
            b.start();
            assertThat(stallOver.await(60, TimeUnit.SECONDS)).isTrue();
            // until token 6 is applied by whichever member holds the partition now
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                synchronized (log) {
                    return log.stream().anyMatch(entry -> entry.contains(":v6("));
                }
            });
        } finally {
            b.close();
            a.close();
        }
        System.out.println("stall: writes to sku-1 in order " + log + "; final " + resource.get("sku-1"));
        assertThat(resource.get("sku-1")).as("sku-1 after token 6 was applied").isEqualTo("v6");
    }

    private static FencedConsumer<String, String> stallConsumer(
            String group,
            String topic,
            InMemoryWatermarkStore store,
            String name,
            Map<String, String> resource,
            java.util.List<String> log,
            CountDownLatch stalled,
            CountDownLatch stallOver) {
        Map<String, Object> config = consumerConfig(group);
        config.put("client.id", group + "-" + name);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .closeTimeout(Duration.ofSeconds(1))
                .topics(topic)
                .watermarkStore(store)
                .handler((record, token) -> {
                    if (!record.key().equals("sku-1")) {
                        return;
                    }
                    if (stalled != null && record.value().equals("v5")) {
                        stalled.countDown();
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                        while (System.nanoTime() < until) { // a stall that no interrupt ends
                            try {
                                Thread.sleep(50);
                            } catch (InterruptedException e) {
                                // keep stalling
                            }
                        }
                        resource.put(record.key(), record.value());
                        log.add(name + ":" + record.value() + "(token " + token + ")");
                        stallOver.countDown();
                        return;
                    }
                    resource.put(record.key(), record.value());
                    log.add(name + ":" + record.value() + "(token " + token + ")");
                })
                .build();
    }

    private static Long stored(String group) {
        return postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT next_offset FROM fencing.kafka_offset WHERE consumer_group = :g")
                        .bind("g", group)
                        .mapTo(Long.class)
                        .findOne()
                        .orElse(null));
    }
}
