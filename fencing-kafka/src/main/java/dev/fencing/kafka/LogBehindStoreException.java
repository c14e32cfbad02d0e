package dev.fencing.kafka;

import dev.fencing.kafka.spi.WatermarkStore;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka returned records of a partition from an offset below the {@link WatermarkStore}'s offset for it: the
 * partition's log no longer reaches the stored offset and Kafka reset the consumer's position by {@code
 * auto.offset.reset}. Either the topic was deleted and created again under the same name (its new log starts
 * at 0 while the store still holds the old log's offsets, watermarks and applied offsets) or the log was
 * truncated (an unclean leader election). The store's state then describes another log: judging these
 * records by it would skip those at or below a key's applied offset (neither handled nor dead-lettered),
 * apply again records already applied, or refuse a new topic's records by the old one's tokens. The consumer
 * stops before handling any of them, and is not retried.
 *
 * <p>What to do: for a topic created again, delete the group's rows for the topic from the store (for {@link
 * PostgresWatermarkStore}, from {@code fencing.kafka_offset} and {@code fencing.kafka_watermark}) with every
 * member of the group stopped, then start them: the new log is read from its beginning. For a truncated log,
 * decide where the group reads on and set the stored offset there ({@code UPDATE fencing.kafka_offset SET
 * next_offset = ...}). A recreated topic whose new log already reaches the stored offset is told from the old
 * one by its topic id ({@link TopicRecreatedException}), where the store keeps topic ids; delete the rows when
 * you recreate the topic all the same.
 */
public final class LogBehindStoreException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final TopicPartition partition;
    private final long storeOffset;
    private final long polledOffset;

    public LogBehindStoreException(String groupId, TopicPartition partition, long storeOffset, long polledOffset) {
        super(
                "group " + groupId + " " + partition + ": Kafka returned records from offset " + polledOffset
                        + ", below the watermark store's offset " + storeOffset
                        + ": the log no longer reaches the stored offset (the topic was deleted and created again, or"
                        + " its log truncated) and Kafka reset the position by auto.offset.reset; stopping instead of"
                        + " judging the log's records by the store's state of another log. If the topic was created"
                        + " again, delete the group's rows for it from the store with every member stopped",
                groupId + " " + partition,
                0,
                null);
        this.partition = partition;
        this.storeOffset = storeOffset;
        this.polledOffset = polledOffset;
    }

    public TopicPartition partition() {
        return partition;
    }

    /** The offset the store holds for the partition: where the consumer was to read on. */
    public long storeOffset() {
        return storeOffset;
    }

    /** The offset of the first record Kafka returned, below {@link #storeOffset()}. */
    public long polledOffset() {
        return polledOffset;
    }
}
