package dev.fencing.kafka.spi;

import dev.fencing.kafka.FencedKafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * Thrown by a {@link WatermarkStore} when a partition's stored offset is not the one the consumer loaded:
 * another member of the group committed it meanwhile (this consumer was a zombie after a rebalance).
 * Nothing of the batch is saved; the consumer reloads the partition and reads on from the stored offset.
 */
public final class PartitionTakenOverException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final TopicPartition partition;

    public PartitionTakenOverException(String groupId, TopicPartition partition, long expected, long stored) {
        super(
                "group " + groupId + " " + partition + ": expected stored offset " + expected + " but found " + stored
                        + "; another consumer committed this partition",
                groupId + " " + partition,
                0,
                null);
        this.partition = partition;
    }

    /** The partition could not be locked for another reason than its offset; {@code why} says which. */
    public PartitionTakenOverException(String groupId, TopicPartition partition, String why) {
        super(
                "group " + groupId + " " + partition + ": " + why + "; the unit is rolled back and read again",
                groupId + " " + partition,
                0,
                null);
        this.partition = partition;
    }

    public TopicPartition partition() {
        return partition;
    }
}
