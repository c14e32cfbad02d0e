package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * What the key-parallel consumer needs from a store to give a transactional handler exactly-once effects:
 * one transaction per record that decides the record against the key's stored watermark and runs the
 * handler, raising the watermark and the key's applied offset with the handler's effects. Implemented by
 * {@code PostgresWatermarkStore}; the argument that this makes a crash and restart neither apply a record
 * twice nor skip one is in {@code KeyParallelRunner}.
 *
 * @param <T> the transaction the handler joins
 */
public interface RecordTransactions<T> {
    /** {@link #applyOnce}: the record was applied now. */
    long APPLIED = 0;
    /** {@link #applyOnce}: the key's applied offset is at or above the record's: it was applied before. */
    long APPLIED_BEFORE = -1;

    /**
     * In one transaction: locks the key's stored watermark; if its applied offset is at or above {@code
     * offset}, returns {@link #APPLIED_BEFORE} and writes nothing; if {@code policy} refuses {@code token}
     * against the stored token, returns the stored token (always positive) and writes nothing; otherwise runs
     * {@code work}, stores the token (never lowering it) with {@code offset} as the key's applied offset,
     * commits and returns {@link #APPLIED}. A failure of {@code work} rolls it all back and is thrown as it is.
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot read or save
     */
    long applyOnce(
            String groupId,
            TopicPartition partition,
            byte[] key,
            long offset,
            long token,
            FencePolicy policy,
            Consumer<? super T> work);
}
