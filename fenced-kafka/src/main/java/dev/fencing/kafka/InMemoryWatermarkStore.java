package dev.fencing.kafka;

import dev.fencing.kafka.internal.KeyHash;
import dev.fencing.kafka.internal.KeyTokens;
import dev.fencing.kafka.internal.PartitionWatermarks;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * A {@link WatermarkStore} in this JVM's heap: watermarks and offsets survive rebalances between consumers
 * that share this instance, not a restart of the JVM.
 *
 * <pre>{@code
 * InMemoryWatermarkStore store = new InMemoryWatermarkStore();
 * FencedConsumer<String, String> a = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
 *         .properties(config).topics("orders").watermarkStore(store).handler(handler).build();
 * }</pre>
 *
 * <p>After a restart the store is empty. If the group's offsets in Kafka moved on meanwhile, the consumer
 * stops at assignment with {@link StoreBehindKafkaException} rather than start from an empty store; if
 * they did not (a new group), the first record of each key is accepted whatever its token. Use {@link
 * PostgresWatermarkStore} where a stale record must be refused across restarts too.
 *
 * <p>There is no transaction: the handler's effects are not undone if {@link #commit} refuses a batch.
 * Memory: about 60 bytes per key (the key bytes, shared with the consumer, and a slot of an open-addressing
 * table), for every key ever seen, so 100,000 keys of 10 bytes take about 6 MB. Thread-safe.
 */
public final class InMemoryWatermarkStore implements WatermarkStore<Void> {
    private final Map<GroupPartition, Stored> partitions = new HashMap<>();

    @Override
    public synchronized PartitionState load(String groupId, TopicPartition partition) {
        Stored stored = partitions.get(new GroupPartition(groupId, partition));
        if (stored == null) {
            return PartitionState.EMPTY;
        }
        Map<Bytes, Long> watermarks = new HashMap<>(Math.max(16, (int) (stored.watermarks.size() / 0.75f) + 1));
        stored.watermarks.forEach((key, token) -> watermarks.put(Bytes.wrap(key), token));
        return new PartitionState(stored.nextOffset, watermarks);
    }

    @Override
    public void commit(String groupId, Function<? super Void, List<PartitionProgress>> work) {
        Objects.requireNonNull(groupId, "groupId");
        List<PartitionProgress> progress = work.apply(null);
        synchronized (this) {
            for (PartitionProgress p : progress) {
                Stored stored = partitions.get(new GroupPartition(groupId, p.partition()));
                long current = stored == null ? -1 : stored.nextOffset;
                if (current != p.expectedOffset()) {
                    throw new StalePartitionStateException(groupId, p.partition(), p.expectedOffset(), current);
                }
            }
            for (PartitionProgress p : progress) {
                Stored stored =
                        partitions.computeIfAbsent(new GroupPartition(groupId, p.partition()), k -> new Stored());
                stored.nextOffset = p.nextOffset();
                // the consumer's own view hands over its key arrays and their hashes; any other map is copied
                if (!PartitionWatermarks.forEachRaised(p.raisedWatermarks(), stored.watermarks::raise)) {
                    p.raisedWatermarks()
                            .forEach((key, token) ->
                                    stored.watermarks.raise(key.get().clone(), token));
                }
            }
        }
    }

    /** False: loading is a copy within the heap, and it lets the consumer judge a partition's records at once. */
    @Override
    public boolean loadsLazily() {
        return false;
    }

    @Override
    public synchronized long loadOffset(String groupId, TopicPartition partition) {
        Stored stored = partitions.get(new GroupPartition(groupId, partition));
        return stored == null ? -1 : stored.nextOffset;
    }

    @Override
    public synchronized Map<Bytes, Long> loadWatermarks(
            String groupId, TopicPartition partition, Collection<Bytes> keys) {
        Stored stored = partitions.get(new GroupPartition(groupId, partition));
        Map<Bytes, Long> found = new HashMap<>();
        if (stored != null) {
            for (Bytes key : keys) {
                long token = stored.watermarks.get(key.get(), KeyHash.of(key.get()));
                if (token > 0) {
                    found.put(key, token);
                }
            }
        }
        return found;
    }

    /** Checks the stored offset only: in one JVM there is no transaction to hold a lock for. */
    @Override
    public synchronized void claim(Void unit, String groupId, TopicPartition partition, long expectedOffset) {
        Stored stored = partitions.get(new GroupPartition(groupId, partition));
        long current = stored == null ? -1 : stored.nextOffset;
        if (current != expectedOffset) {
            throw new StalePartitionStateException(groupId, partition, expectedOffset, current);
        }
    }

    /** Number of keys held, over all groups and partitions. */
    public synchronized int size() {
        return partitions.values().stream().mapToInt(s -> s.watermarks.size()).sum();
    }

    private record GroupPartition(String groupId, TopicPartition partition) {}

    private static final class Stored {
        long nextOffset = -1;
        // raising a key already held is one probe, with the hash the consumer computed, and no allocation
        final KeyTokens watermarks = new KeyTokens();
    }
}
