package dev.fencing.kafka;

import java.util.List;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;

/**
 * Durable memory of a {@link FencedConsumer}: per consumer group and partition, the highest accepted token
 * of each record key and the offset to read next.
 *
 * <p>The consumer {@link #load loads} a partition when it is assigned, before handling any of its records,
 * and holds its watermarks only while it owns the partition. After each batch it calls {@link #commit}:
 * the store runs the batch's work inside one unit of work of type {@code T} (a database transaction, for
 * a transactional store) and saves what the work returns in the same unit, or nothing at all.
 *
 * <p>Implementations: {@link InMemoryWatermarkStore} (this JVM only; {@code T} is {@code Void}) and
 * {@link PostgresWatermarkStore} (survives restarts; {@code T} is a Jdbi {@code Handle}).
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
     * @throws WatermarkStoreException if the store cannot be read
     */
    PartitionState load(String groupId, TopicPartition partition);

    /**
     * Runs {@code work} in one unit of work and saves the progress it returns in the same unit. For each
     * partition the stored offset must equal {@link PartitionProgress#expectedOffset()}; watermarks never go
     * down (a lower token than the stored one leaves the stored one).
     *
     * @throws StalePartitionStateException if a partition was committed by someone else; nothing is saved
     * @throws WatermarkStoreException if the store cannot save; nothing is saved
     * @throws RuntimeException whatever {@code work} throws; nothing is saved
     */
    void commit(String groupId, Function<? super T, List<PartitionProgress>> work);
}
