package dev.fencing.kafka.spi;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Bytes;

/**
 * Durable memory of a {@link dev.fencing.kafka.FencedConsumer}: per consumer group and partition, the highest accepted token
 * of each record key and the offset to read next.
 *
 * <p>When a partition is assigned the consumer reads its offset ({@link #loadOffset}) and, for a store that
 * does not {@link #loadsLazily() load lazily}, all its watermarks ({@link #load}); a lazily loaded
 * partition's watermarks are read with {@link #loadWatermarks}, per poll, for the keys the consumer does not
 * hold, before their records are judged. The consumer holds watermarks only while it owns the partition.
 * Every unit of work {@link #lockPartition locks} its partitions before handling their records. After each batch it calls {@link #commit}:
 * the store runs the batch's work inside one unit of work of type {@code T} (a database transaction, for
 * a transactional store) and saves what the work returns in the same unit, or nothing at all.
 *
 * <p>Implementations: {@link dev.fencing.kafka.InMemoryWatermarkStore} (this JVM only; {@code T} is {@code Void}) and
 * {@link dev.fencing.kafka.PostgresWatermarkStore} (survives restarts; {@code T} is a Jdbi {@code Handle}).
 *
 * <pre>{@code
 * WatermarkStore<Handle> store = PostgresWatermarkStore.create(jdbi);
 * PartitionState state = store.load("billing", new TopicPartition("orders", 0));
 * }</pre>
 *
 * Implementations must be thread-safe: several consumers of one group may share a store.
 *
 * @param <T> what the batch's work receives to join the unit of work
 */
public interface WatermarkStore<T> {

    /**
     * The stored state of one partition for one group; {@link PartitionState#EMPTY} if none.
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read
     */
    PartitionState load(String groupId, TopicPartition partition);

    /**
     * Runs {@code work} in one unit of work and saves the progress it returns in the same unit. For each
     * partition the stored offset must equal {@link PartitionProgress#expectedOffset()}; watermarks never go
     * down (a lower token than the stored one leaves the stored one).
     *
     * @throws PartitionTakenOverException if a partition was committed by someone else; nothing is saved
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot save; nothing is saved
     * @throws RuntimeException whatever {@code work} throws; nothing is saved
     */
    void commit(String groupId, Function<? super T, List<PartitionProgress>> work);

    /**
     * Whether the consumer loads a partition's watermarks key by key as its records arrive ({@link
     * #loadOffset} at assignment, then {@link #loadWatermarks} per poll for keys it does not hold), or all at
     * once with {@link #load} when the partition is assigned. Lazy loading keeps the rebalance callback short
     * (a partition with a million keys loads in the time of one query) and lets the consumer drop watermarks
     * it holds and load them again later. Default: true.
     */
    default boolean loadsLazily() {
        return true;
    }

    /**
     * The stored offset of a partition, {@code -1} if none; the default takes it from {@link #load}.
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read
     */
    default long loadOffset(String groupId, TopicPartition partition) {
        return load(groupId, partition).nextOffset();
    }

    /**
     * The stored watermarks of {@code keys} (a key without one is left out); the default filters {@link #load}.
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read
     */
    default Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        Map<Bytes, Long> all = load(groupId, partition).watermarks();
        Map<Bytes, Long> found = new HashMap<>();
        for (Bytes key : keys) {
            Long token = all.get(key);
            if (token != null) {
                found.put(key, token);
            }
        }
        return found;
    }

    /**
     * Called by the consumer inside {@code work} of {@link #commit}, with the unit of work it was given,
     * before the first record of {@code partition} is handled in that unit. Makes the unit the only one that
     * can commit the partition until it ends (a transactional store locks the partition's stored progress
     * for the rest of the transaction, {@link dev.fencing.kafka.InMemoryWatermarkStore} holds a lock until its {@link #commit}
     * ends: a second lock waits), and checks that the stored offset still equals
     * {@code expectedOffset}. This is how a member that was expelled from its group (a zombie) is stopped
     * before its handler acts, rather than at the commit.
     *
     * <p>The default does nothing: the offset compare-and-set of {@link #commit} alone then catches a zombie,
     * after its handler ran.
     *
     * @throws PartitionTakenOverException if another consumer committed the partition meanwhile
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read
     */
    default void lockPartition(T unit, String groupId, TopicPartition partition, long expectedOffset) {}

    /**
     * The Kafka topic id ({@code TopicDescription.topicId()}) the store holds for {@code topic} in the group,
     * after recording {@code currentId} as that id if the store held none. The consumer calls it when it takes
     * partitions of the topic, before it reads their offsets, with the id Kafka gives the topic now, and stops
     * with {@link dev.fencing.kafka.TopicRecreatedException} if the returned id is another: the topic was
     * deleted and created again under the same name, and the store's offsets, watermarks and applied offsets
     * are of the old topic. Recording the id before any progress of the topic is saved means that no crash
     * leaves progress without it; progress saved before the store knew ids (by a store or schema of an earlier
     * version) gets the id of the topic the consumer finds when it next takes the partition.
     *
     * <p>The default returns empty and records nothing: a store without it makes no recreation check when
     * partitions are taken, and a topic recreated while the consumer was stopped, whose new log already reaches
     * the stored offset, is read on from there (its first records skipped) as before. (A topic recreated while
     * the consumer runs is caught all the same: before it saves progress, the consumer compares the topic's id
     * with the one it found when it took the partitions.)
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read or written
     */
    default Optional<Uuid> recordTopicId(String groupId, String topic, Uuid currentId) {
        return Optional.empty();
    }
}
