package dev.fencing.kafka.spi;

import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * What one batch did to one partition, for {@link WatermarkStore#commit}.
 *
 * @param expectedOffset the stored offset the consumer last loaded or saved ({@code -1}: none); the store
 *     refuses the batch with {@link PartitionTakenOverException} if it has another
 * @param nextOffset the offset after the last record whose handling finished
 * @param raisedWatermarks keys whose watermark this batch raised, with the new token
 */
public record PartitionProgress(
        TopicPartition partition, long expectedOffset, long nextOffset, Map<Bytes, Long> raisedWatermarks) {
    public PartitionProgress {
        Objects.requireNonNull(partition, "partition");
        Objects.requireNonNull(raisedWatermarks, "raisedWatermarks");
        if (nextOffset < 0) {
            throw new IllegalArgumentException("nextOffset must be >= 0, got " + nextOffset);
        }
    }
}
