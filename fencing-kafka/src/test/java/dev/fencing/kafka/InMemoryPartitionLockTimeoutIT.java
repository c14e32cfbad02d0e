package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

/**
 * Two members of one group sharing an {@link InMemoryWatermarkStore}: the first hangs in its handler (its unit,
 * and with it the partition's lock, never ends), is expelled, and the second takes the partition. The second's
 * lock must give up after the store's lock timeout, as {@link PostgresWatermarkStore}'s does, so that its poll
 * thread goes on polling (and stays in the group) and its close stops it within the close timeout. A lock that
 * waits without bound leaves the second's poll thread parked in the lock until the first's unit ends.
 */
class InMemoryPartitionLockTimeoutIT {
    @Test
    void aLockOnAPartitionAHungUnitHoldsGivesUpAfterTheLockTimeoutAndTheWaitingMemberStillCloses() throws Exception {
        String topic = newTopic("memlocktimeout", 1);
        String group = newGroup("memlocktimeout");
        RefusalCounter store = new RefusalCounter(new InMemoryWatermarkStore(Duration.ofMillis(500)));
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aInHandler = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "v5", 5);

            Map<String, Object> hanging = consumerConfig(group);
            hanging.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2_000);
            FencedConsumer<String, String> a = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(hanging)
                    .topics(topic)
                    .watermarkStore(store)
                    .handler((record, token) -> {
                        applied.add("A:" + record.value());
                        aInHandler.countDown();
                        awaitLatch(releaseA);
                    })
                    .build();
            a.start();
            try {
                assertThat(aInHandler.await(60, TimeUnit.SECONDS)).isTrue();

                FencedConsumer<String, String> b = FencedConsumer.builder(
                                new StringDeserializer(), new StringDeserializer())
                        .properties(consumerConfig(group))
                        .topics(topic)
                        .watermarkStore(store)
                        .closeTimeout(Duration.ofSeconds(5))
                        .handler((record, token) -> applied.add("B:" + record.value()))
                        .build();
                CompletableFuture<Void> bStopped = b.start();
                try {
                    // A is expelled after 2 s and B takes the partition; A's unit still holds its lock
                    await().atMost(Duration.ofSeconds(60))
                            .alias("B's locks of the partition that A's hung unit holds, given up")
                            .until(() -> store.refusals(b.clientId()) >= 2);
                    assertThat(applied).containsExactly("A:v5");
                } finally {
                    b.close();
                }
                bStopped.get(10, TimeUnit.SECONDS); // B's poll thread ended, though A's unit still holds the lock
                assertThat(applied).containsExactly("A:v5");
            } finally {
                releaseA.countDown();
                a.close();
            }
        }
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The store as it is; counts, per poll thread, the partition locks refused as taken over. */
    private static final class RefusalCounter implements WatermarkStore<Void> {
        private final InMemoryWatermarkStore store;
        private final Map<String, AtomicInteger> refused = new java.util.concurrent.ConcurrentHashMap<>();

        RefusalCounter(InMemoryWatermarkStore store) {
            this.store = store;
        }

        int refusals(String clientId) {
            AtomicInteger count = refused.get(clientId);
            return count == null ? 0 : count.get();
        }

        @Override
        public void lockPartition(Void unit, String groupId, TopicPartition partition, long expectedOffset) {
            try {
                store.lockPartition(unit, groupId, partition, expectedOffset);
            } catch (PartitionTakenOverException e) {
                refused.computeIfAbsent(Thread.currentThread().getName(), k -> new AtomicInteger())
                        .incrementAndGet();
                throw e;
            }
        }

        @Override
        public PartitionState load(String groupId, TopicPartition partition) {
            return store.load(groupId, partition);
        }

        @Override
        public void commit(String groupId, Function<? super Void, List<PartitionProgress>> work) {
            store.commit(groupId, work);
        }

        @Override
        public boolean loadsLazily() {
            return store.loadsLazily();
        }

        @Override
        public long loadOffset(String groupId, TopicPartition partition) {
            return store.loadOffset(groupId, partition);
        }

        @Override
        public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
            return store.loadWatermarks(groupId, partition, keys);
        }
    }
}
