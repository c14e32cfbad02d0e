package dev.fencing.kafka;

import dev.fencing.kafka.internal.KeyHash;
import dev.fencing.kafka.internal.KeyTokens;
import dev.fencing.kafka.internal.PartitionWatermarks;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Bytes;

/**
 * A {@link WatermarkStore} in this JVM's heap: watermarks and offsets survive rebalances between consumers
 * that share this instance, not a restart of the JVM.
 *
 * <pre>{@code
 * InMemoryWatermarkStore store = new InMemoryWatermarkStore();
 * FencedConsumer<String, String> a = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
 *         .properties(config)
 *         .topics("orders")
 *         .watermarkStore(store)
 *         .handler(handler)
 *         .build();
 * }</pre>
 *
 * <p>Partition locks: {@link #lockPartition} takes an exclusive lock on the group's partition that is held until the {@link
 * #commit} it was called in ends (committed, refused or failed), so a second unit (a member expelled from
 * the group, or the new owner) waits, and then fails with {@link PartitionTakenOverException} if the first
 * one committed the partition meanwhile: as with {@link PostgresWatermarkStore}, a zombie stops before its
 * handler runs, not at its commit. As there too, a lock waits for the unit that holds the partition at most
 * the store's lock timeout ({@value #DEFAULT_LOCK_TIMEOUT_SECONDS} s unless given to {@link
 * #InMemoryWatermarkStore(Duration)}; keep it well below the consumer's {@code max.poll.interval.ms}): a unit
 * whose handler hangs, or a member frozen inside its unit, holds the lock for as long as it does. A lock that
 * times out fails with {@link PartitionTakenOverException} (not a store failure, and not retried by the
 * consumer's retry policy): the unit is rolled back and read again at the next poll, so the waiting member
 * keeps polling, stays in its group and stops when closed. A unit locks partitions in order of topic and
 * partition; a lock out of that order (a later poll of a unit spanning several) does not wait on a busy
 * partition but fails at once with {@link PartitionTakenOverException} (the unit is rolled back and read
 * again), so two units never wait on each other.
 *
 * <p>After a restart the store is empty, so a consumer that was already consuming (the group's committed
 * offsets in Kafka are ahead of the empty store) stops at assignment with {@link StoreBehindKafkaException}
 * rather than accept stale records; only a group with no committed offsets starts, and then the first record
 * of each key is accepted whatever its token. Use {@link PostgresWatermarkStore} where a stale record must be
 * refused across restarts too.
 *
 * <p>Topic ids: the store keeps the id of each topic a group took partitions of ({@link #recordTopicId}), so
 * that a consumer taking a partition of a topic deleted and created again under the same name while this
 * store lives stops with {@link TopicRecreatedException} instead of reading the new topic by the old one's
 * offsets and watermarks.
 *
 * <p>There is no transaction: the handler's effects are not undone if {@link #commit} refuses a batch.
 * Memory: about 60 bytes per key (the key bytes, shared with the consumer, and a slot of an open-addressing
 * table), for every key ever seen, so 100,000 keys of 10 bytes take about 6 MB. Thread-safe.
 */
public final class InMemoryWatermarkStore implements WatermarkStore<Void> {
    private static final Comparator<GroupPartition> LOCK_ORDER = Comparator.comparing(GroupPartition::groupId)
            .thenComparing(g -> g.partition().topic())
            .thenComparingInt(g -> g.partition().partition());

    private final Map<GroupPartition, Stored> partitions = new HashMap<>();
    private final Map<GroupTopic, Uuid> topicIds = new ConcurrentHashMap<>();
    // one per partition ever locked (bounded by the partitions of the groups using this store)
    private final Map<GroupPartition, ReentrantLock> partitionLocks = new ConcurrentHashMap<>();
    // the locks of the commit running on this thread; null outside commit
    private final ThreadLocal<List<GroupPartition>> unitLocks = new ThreadLocal<>();
    private final long lockTimeoutNanos;

    /** The default of {@link #InMemoryWatermarkStore(Duration)}'s lock timeout, in seconds. */
    public static final int DEFAULT_LOCK_TIMEOUT_SECONDS = PostgresWatermarkStore.DEFAULT_LOCK_TIMEOUT_SECONDS;

    /** A store whose locks wait at most {@value #DEFAULT_LOCK_TIMEOUT_SECONDS} s for another unit's. */
    public InMemoryWatermarkStore() {
        this(Duration.ofSeconds(DEFAULT_LOCK_TIMEOUT_SECONDS));
    }

    /**
     * A store whose locks wait at most {@code lockTimeout} for the unit that holds a partition: from 1 ms to
     * below the consumer's {@code max.poll.interval.ms}, or a member waiting on a hung one is expelled from the
     * group in turn.
     *
     * @throws IllegalArgumentException if {@code lockTimeout} is below 1 ms or over 24 hours, naming it
     */
    public InMemoryWatermarkStore(Duration lockTimeout) {
        Objects.requireNonNull(lockTimeout, "lockTimeout");
        if (lockTimeout.toMillis() < 1 || lockTimeout.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("lockTimeout must be from 1 ms to 24 hours, got " + lockTimeout);
        }
        this.lockTimeoutNanos = lockTimeout.toNanos();
    }

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
        if (unitLocks.get() != null) {
            throw new IllegalStateException("commit called inside the work of another commit on this thread");
        }
        List<GroupPartition> locks = new ArrayList<>();
        unitLocks.set(locks);
        try {
            save(groupId, work.apply(null));
        } finally {
            unitLocks.remove();
            // the unit has ended, committed or not: every unit waiting on its partitions may go on
            for (GroupPartition locked : locks) {
                partitionLocks.get(locked).unlock();
            }
        }
    }

    private void save(String groupId, List<PartitionProgress> progress) {
        synchronized (this) {
            for (PartitionProgress p : progress) {
                Stored stored = partitions.get(new GroupPartition(groupId, p.partition()));
                long current = stored == null ? -1 : stored.nextOffset;
                if (current != p.expectedOffset()) {
                    throw new PartitionTakenOverException(groupId, p.partition(), p.expectedOffset(), current);
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

    /**
     * Locks the partition for the group until the enclosing {@link #commit} ends, waiting at most the store's
     * lock timeout while another unit holds it, then checks the stored offset.
     *
     * @throws PartitionTakenOverException if the stored offset is not {@code expectedOffset}, if another unit
     *     held the partition for the whole lock timeout, or if the partition is busy and this unit already
     *     holds a partition that sorts after it
     * @throws IllegalStateException if called outside the work of {@link #commit}
     * @throws WatermarkStoreException if interrupted while waiting (the interrupt flag is kept)
     */
    @Override
    public void lockPartition(Void unit, String groupId, TopicPartition partition, long expectedOffset) {
        List<GroupPartition> locks = unitLocks.get();
        if (locks == null) {
            throw new IllegalStateException("lock of " + partition + " for group " + groupId
                    + " outside the work of commit: nothing would release it");
        }
        GroupPartition key = new GroupPartition(groupId, partition);
        ReentrantLock lock = partitionLocks.computeIfAbsent(key, k -> new ReentrantLock());
        if (!lock.isHeldByCurrentThread()) {
            // Waiting only for a partition after every one held keeps all waits in one order: no cycle of
            // units waiting on each other. Out of order, a busy partition fails the unit, which is read again.
            boolean inOrder = locks.stream().allMatch(held -> LOCK_ORDER.compare(held, key) < 0);
            if (inOrder) {
                boolean locked;
                try {
                    locked = lock.tryLock(lockTimeoutNanos, TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new WatermarkStoreException(
                            "interrupted while locking " + partition + " for group " + groupId, e);
                }
                if (!locked) {
                    // as a PostgreSQL lock_timeout: the partition is busy, the unit is read again
                    throw new PartitionTakenOverException(
                            groupId,
                            partition,
                            "another unit of work holds its lock (waited " + Duration.ofNanos(lockTimeoutNanos)
                                    + ", the store's lock timeout)");
                }
            } else if (!lock.tryLock()) {
                throw new PartitionTakenOverException(
                        groupId,
                        partition,
                        "another unit of work holds its lock, and this unit already holds a partition that sorts"
                                + " after it (waiting could deadlock)");
            }
            locks.add(key);
        }
        long current = loadOffset(groupId, partition);
        if (current != expectedOffset) {
            throw new PartitionTakenOverException(groupId, partition, expectedOffset, current);
        }
    }

    /** Records {@code currentId} if the group has no id for the topic yet; returns the id held. */
    @Override
    public Optional<Uuid> recordTopicId(String groupId, String topic, Uuid currentId) {
        Objects.requireNonNull(currentId, "currentId");
        return Optional.of(topicIds.computeIfAbsent(new GroupTopic(groupId, topic), k -> currentId));
    }

    /** Number of keys held, over all groups and partitions. */
    public synchronized int size() {
        return partitions.values().stream().mapToInt(s -> s.watermarks.size()).sum();
    }

    private record GroupPartition(String groupId, TopicPartition partition) {}

    private record GroupTopic(String groupId, String topic) {}

    private static final class Stored {
        long nextOffset = -1;
        // raising a key already held is one probe, with the hash the consumer computed, and no allocation
        final KeyTokens watermarks = new KeyTokens();
    }
}
