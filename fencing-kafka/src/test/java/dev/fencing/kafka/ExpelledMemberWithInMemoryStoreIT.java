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
import dev.fencing.kafka.spi.WatermarkStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

/**
 * With {@link InMemoryWatermarkStore}, a member expelled from the group (a zombie) in the middle of its unit
 * must not apply the rest of that unit after the new owner applied fresher tokens of the same key. The store's
 * lock holds the partition until the zombie's commit ends, so the new owner waits for it and then reloads.
 * Without that lock (a partition lock that only compares offsets) the new owner applies v5, v10 and v20 while the zombie
 * stalls, and the zombie then applies v10 after v20: that is what the history check below catches.
 */
class ExpelledMemberWithInMemoryStoreIT {
    @Test
    void anExpelledMembersUnitNeverAppliesATokenOlderThanOneTheNewOwnerApplied() throws Exception {
        String topic = newTopic("memzombie", 1);
        String group = newGroup("memzombie");
        LockWatcher store = new LockWatcher(new InMemoryWatermarkStore());
        List<Long> appliedTokens = Collections.synchronizedList(new ArrayList<>());
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aInHandler = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "v5", 5);
            sendFenced(producer, topic, "sku-1", "v10", 10);

            Map<String, Object> stalling = consumerConfig(group);
            stalling.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2_000);
            FencedConsumer<String, String> a = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(stalling)
                    .topics(topic)
                    .watermarkStore(store)
                    .handler((record, token) -> {
                        applied.add("A:" + record.value());
                        appliedTokens.add(token);
                        if (aInHandler.getCount() > 0) {
                            aInHandler.countDown();
                            awaitLatch(releaseA);
                        }
                    })
                    .build();
            a.start();
            assertThat(aInHandler.await(60, TimeUnit.SECONDS)).isTrue();

            try (FencedConsumer<String, String> b = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(consumerConfig(group))
                    .topics(topic)
                    .watermarkStore(store)
                    .handler((record, token) -> {
                        applied.add("B:" + record.value());
                        appliedTokens.add(token);
                    })
                    .build()) {
                b.start();
                // A is expelled after 2 s and B takes the partition: B either waits on A's lock (the store
                // holds it) or, without that, applies the partition's records while A stalls
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> applied.contains("B:v10") || store.waitingOnAPartitionLock(b.clientId()));
                sendFenced(producer, topic, "sku-1", "v20", 20);
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> applied.contains("B:v20") || store.waitingOnAPartitionLock(b.clientId()));
                releaseA.countDown();
                a.close(); // waits for A's unit to end
                await().atMost(Duration.ofSeconds(60)).until(() -> applied.contains("B:v20"));
            }
        }
        // the resource's history: each applied token must be >= every token applied before it
        long max = 0;
        for (int i = 0; i < appliedTokens.size(); i++) {
            long t = appliedTokens.get(i);
            assertThat(t).as("write %d of %s is stale", i, applied).isGreaterThanOrEqualTo(max);
            max = Math.max(max, t);
        }
        assertThat(applied).startsWith("A:v5").endsWith("B:v20");
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The store as it is; tells which poll thread is inside {@link #lockPartition} and parked there. */
    private static final class LockWatcher implements WatermarkStore<Void> {
        private final InMemoryWatermarkStore store;
        private final Map<String, Thread> locking = new java.util.concurrent.ConcurrentHashMap<>();

        LockWatcher(InMemoryWatermarkStore store) {
            this.store = store;
        }

        /** True while the poll thread named {@code clientId} waits inside a lock. */
        boolean waitingOnAPartitionLock(String clientId) {
            Thread thread = locking.get(clientId);
            return thread != null
                    && (thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING);
        }

        @Override
        public void lockPartition(Void unit, String groupId, TopicPartition partition, long expectedOffset) {
            Thread self = Thread.currentThread();
            locking.put(self.getName(), self);
            try {
                store.lockPartition(unit, groupId, partition, expectedOffset);
            } finally {
                locking.remove(self.getName());
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
