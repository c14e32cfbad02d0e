package dev.fencing.kafka.internal;

import java.util.Collection;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * A store in which the key-parallel consumer applies records one by one ({@link RecordTransactions}), keeping
 * with each key's watermark its <em>applied offset</em>: the offset of the key's last record applied in the
 * watermark's transaction, every earlier record of the key having been dealt with durably before (see {@link
 * KeyParallelRunner}). Those records are finished key by key, not in the partition's order, so a member that
 * crashed, or closed with records cancelled, leaves keys applied past the partition's stored offset.
 *
 * <p>A key-parallel successor skips them record by record in its own transactions. A serial one decides a poll's
 * records against watermarks it loaded lazily, so its load reads the applied offsets too ({@link #loadKeys}), and
 * a record at or below its key's applied offset is skipped: it was applied (or refused) once already. Without
 * that, a serial member taking a partition from a crashed key-parallel one applied such a record a second time
 * (its token equals the stored watermark) or dead-lettered an applied record as stale (under a policy that
 * refuses equal tokens).
 */
public interface AppliedOffsetStore {

    /**
     * {@link dev.fencing.kafka.spi.WatermarkStore#loadWatermarks}, in the same read: the stored watermarks of
     * {@code keys} and, of those, the applied offsets at or above {@code from}.
     *
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot be read
     */
    LoadedKeys loadKeys(String groupId, TopicPartition partition, Collection<Bytes> keys, long from);

    /**
     * @param watermarks the stored token of each key that has one
     * @param appliedOffsets the applied offset of each key whose applied offset is at or above the load's {@code
     *     from}; usually empty
     */
    record LoadedKeys(Map<Bytes, Long> watermarks, Map<Bytes, Long> appliedOffsets) {}
}
