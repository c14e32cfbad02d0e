package dev.fencing.kafka.spi;

import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * What one batch did to one partition, for {@link WatermarkStore#commit}.
 *
 * @param expectedOffset the stored offset the consumer last loaded or saved ({@code -1}: none); the store
 *     refuses the batch with {@link PartitionTakenOverException} if it has another
 * @param nextOffset the offset after the last record whose handling finished
 * @param raisedWatermarks keys whose watermark this batch raised, with the new token
 * @param newKeys a hint: keys of {@code raisedWatermarks} that, as far as the consumer knows, have no stored
 *     watermark (loaded and not found, or first seen in this batch). A store may write them without looking
 *     for a stored one first, but it must still keep a higher stored watermark if it finds one: the hint can be
 *     wrong (another member may have written the key since the consumer read it), and a key left out of it is
 *     merely looked for. Empty means no hint.
 */
public record PartitionProgress(
        TopicPartition partition,
        long expectedOffset,
        long nextOffset,
        Map<Bytes, Long> raisedWatermarks,
        Set<Bytes> newKeys) {
    public PartitionProgress {
        Objects.requireNonNull(partition, "partition");
        Objects.requireNonNull(raisedWatermarks, "raisedWatermarks");
        Objects.requireNonNull(newKeys, "newKeys");
        if (nextOffset < 0) {
            throw new IllegalArgumentException("nextOffset must be >= 0, got " + nextOffset);
        }
    }

    /** Progress without a hint of new keys: each raised key is looked for in the store. */
    public PartitionProgress(
            TopicPartition partition, long expectedOffset, long nextOffset, Map<Bytes, Long> raisedWatermarks) {
        this(partition, expectedOffset, nextOffset, raisedWatermarks, Set.of());
    }
}
