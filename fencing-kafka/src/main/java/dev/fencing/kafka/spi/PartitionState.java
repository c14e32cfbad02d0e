package dev.fencing.kafka.spi;

import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.utils.Bytes;

/**
 * What a {@link WatermarkStore} remembers about one partition for one consumer group.
 *
 * @param nextOffset the offset to read next, or {@code -1} if the store has none (then Kafka's committed
 *     offset or {@code auto.offset.reset} decides)
 * @param watermarks the highest accepted token per serialized record key
 */
public record PartitionState(long nextOffset, Map<Bytes, Long> watermarks) {
    public static final PartitionState EMPTY = new PartitionState(-1, Map.of());

    public PartitionState {
        if (nextOffset < -1) {
            throw new IllegalArgumentException("nextOffset must be >= -1, got " + nextOffset);
        }
        Objects.requireNonNull(watermarks, "watermarks");
    }
}
