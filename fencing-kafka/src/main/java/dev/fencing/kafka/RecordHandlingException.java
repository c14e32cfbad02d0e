package dev.fencing.kafka;

import org.apache.kafka.common.TopicPartition;

/**
 * The handler threw on a record; the consumer stopped. Offsets were committed up to, not including, this
 * record (with a transactional handler: up to the last committed batch, since the batch was rolled back).
 */
public final class RecordHandlingException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final TopicPartition partition;
    private final long offset;

    public RecordHandlingException(TopicPartition partition, long offset, long token, Throwable cause) {
        super(
                "handler failed on " + partition + " offset " + offset + " (token " + token + "): " + cause,
                partition + "@" + offset,
                token,
                cause);
        this.partition = partition;
        this.offset = offset;
    }

    public TopicPartition partition() {
        return partition;
    }

    public long offset() {
        return offset;
    }
}
