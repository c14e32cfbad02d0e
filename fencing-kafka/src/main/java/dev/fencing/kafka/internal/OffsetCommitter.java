package dev.fencing.kafka.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits to Kafka the offsets of records whose handling finished: asynchronously after each unit, at once
 * when partitions are revoked, and one last time when the consumer closes. With a store these commits only
 * keep Kafka's view of the group close to the store's (the store is the record of progress); without one
 * they are the only record, and a failed commit means records handled again. Poll thread only.
 */
public final class OffsetCommitter {
    private static final Logger LOG = LoggerFactory.getLogger(OffsetCommitter.class);

    private final Consumer<ByteBuffer, ByteBuffer> consumer;
    private final String clientId;
    private final boolean onlyRecord; // no store: Kafka's offsets are all there is
    private final Map<TopicPartition, OffsetAndMetadata> finished = new HashMap<>();

    public OffsetCommitter(Consumer<ByteBuffer, ByteBuffer> consumer, String clientId, boolean onlyRecord) {
        this.consumer = consumer;
        this.clientId = clientId;
        this.onlyRecord = onlyRecord;
    }

    /** Records that everything before {@code nextOffset} of the partition is finished. */
    public void finished(TopicPartition partition, long nextOffset) {
        finished.put(partition, new OffsetAndMetadata(nextOffset));
    }

    /** Forgets a partition (assigned afresh, or released), returning what was finished and not yet forgotten. */
    public OffsetAndMetadata forget(TopicPartition partition) {
        return finished.remove(partition);
    }

    /** After a unit: sends every finished offset, without waiting. */
    public void commitAsync() {
        consumer.commitAsync(new HashMap<>(finished), (offsets, e) -> {
            if (e != null) {
                LOG.debug("async offset commit of {} to Kafka failed: {}", clientId, e.toString());
            }
        });
    }

    /** On revoke: commits these offsets before the partitions go; a failure is logged. */
    public void commitNow(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
        } catch (KafkaException e) {
            logFailure("offset commit on revoke for " + offsets.keySet(), e);
        }
    }

    /** On close: commits what is finished, waiting at most {@code timeout}; a failure is logged. */
    public void commitFinal(Duration timeout) {
        if (finished.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(finished, timeout);
        } catch (KafkaException e) {
            logFailure("final offset commit of " + clientId, e);
        }
        finished.clear();
    }

    private void logFailure(String what, KafkaException e) {
        if (onlyRecord) {
            LOG.warn(
                    "{} to Kafka failed; records after the last committed offset will be handled again: {}",
                    what,
                    e.toString());
        } else {
            LOG.debug("{} to Kafka failed (the store has the offsets): {}", what, e.toString());
        }
    }
}
