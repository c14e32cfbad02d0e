package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import java.util.List;
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
     * commits and returns {@link #APPLIED}. A failure of {@code work} rolls it all back and is thrown as it is. A
     * transaction handler that runs a rolled-back transaction again (Jdbi's {@code SerializableTransactionRunner})
     * runs {@code work} again in the new one: {@code work} keeps nothing from one run to the next.
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

    /**
     * {@link #applyGroup}: the group's time ran out before the record's turn, or the group ended at its turn or an
     * earlier record's ({@link GroupWork#start}); it was neither run nor decided.
     */
    long NOT_RUN = Long.MIN_VALUE;

    /** One record of a commit group: its partition, key (never null), offset and token (already read, positive). */
    record GroupRecord(TopicPartition partition, byte[] key, long offset, long token) {}

    /** The caller's part of a commit group, called inside its transaction, in the records' order. */
    interface GroupWork<T> {
        /**
         * The record at {@code index} has its turn, before it is decided: whether it may start. If not, the group
         * ends there, as when its time runs out: that record and the later ones are {@link #NOT_RUN}, and what the
         * earlier ones did commits. Called at each record's turn, the first record's too, at most once per record
         * (the group's transaction is not run again).
         */
        default boolean start(int index) {
            return true;
        }

        /** Runs the accepted record at {@code index} in {@code transaction}. */
        void run(T transaction, int index);

        /**
         * The record at {@code index} is refused by its key's token {@code stored}: called before the group
         * commits, so that whatever the caller does with a refusal (a dead letter, acknowledged) is done before a
         * later record of the key, applied in the same group, moves the key's applied offset past this one.
         */
        void refused(int index, long stored);
    }

    /**
     * A commit group: {@link #applyOnce} for several records in one transaction. Locks each key of {@code
     * records} once, decides the records in their order (records of one key must be in offset order), each
     * against its key's stored token and applied offset as raised by the group's earlier records, runs {@code
     * work} for each accepted one, writes every applied key's token and applied offset in one statement and
     * commits. Records whose turn comes after {@code deadline} (a {@link System#nanoTime()}) are {@link
     * #NOT_RUN}; the first record always runs, unless {@code work} does not {@linkplain GroupWork#start start}
     * it.
     *
     * @return per record, as {@link #applyOnce}: {@link #APPLIED}, {@link #APPLIED_BEFORE} or the stored token
     *     that refused it, or {@link #NOT_RUN}; null if the group was rolled back, with nothing of it committed,
     *     because of a conflict (a serialization failure, a deadlock, a key another transaction created
     *     meanwhile) or because {@code work} threw: the caller reruns the records one by one
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot read or save
     */
    long[] applyGroup(
            String groupId, List<GroupRecord> records, FencePolicy policy, long deadline, GroupWork<? super T> work);
}
