package dev.fencing.kafka;

import java.time.Duration;
import java.util.Collection;
import org.apache.kafka.common.TopicPartition;

/**
 * The key-parallel consumer gave partitions up (revoked, lost, or the consumer closing) while handlers of
 * their records were still running after {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG}: it stops
 * rather than let those records run on under a partition it no longer owns. Their offsets are not committed,
 * so the partition's next owner handles them again (with a transactional handler and {@link
 * PostgresWatermarkStore}, the key's applied offset makes that second attempt a no-op if the first commits).
 */
public final class HandlersStillRunningException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    public HandlersStillRunningException(String groupId, Collection<TopicPartition> partitions, Duration waited) {
        super("group " + groupId + ": handlers of " + partitions + " still running " + waited.toMillis()
                + " ms after their partitions were given up; stopping so that no record of a partition this"
                + " consumer no longer owns starts");
    }
}
