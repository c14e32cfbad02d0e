package dev.fencing.kafka.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits to Kafka the offsets of records whose handling finished: asynchronously after each unit (the
 * offsets that unit saved), and, when partitions are revoked and when the consumer closes, what is still on its
 * way. With a store these commits only keep Kafka's view of the group close to the store's (the store is the
 * record of progress), and each offset is sent once, right after the save that checked its topic's id: sent
 * later (with another partition's unit, at a revoke, at the close) it could land on a topic created again
 * under the name since, whose committed offset would then be the old log's. Without a store they are the only
 * record, a failed commit means records handled again, and each unit, a revoke and the close send every
 * finished offset of the partitions again. Poll thread only.
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

    /**
     * After a unit: sends the finished offsets of the partitions it saved, without waiting. Without a store it
     * sends every finished offset, so that one whose commit failed goes again with the next unit of any partition
     * (there is no topic id to check, and Kafka's offsets are the only record).
     */
    public void commitAsync(Collection<TopicPartition> saved) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition partition : onlyRecord ? finished.keySet() : saved) {
            OffsetAndMetadata offset = finished.get(partition);
            if (offset != null) {
                offsets.put(partition, offset);
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        consumer.commitAsync(offsets, (committed, e) -> {
            if (e != null) {
                LOG.debug("async offset commit of {} to Kafka failed: {}", clientId, e.toString());
            }
        });
    }

    /**
     * On revoke, before the partitions go: without a store commits these offsets; with one waits for the
     * commits already sent (an empty {@code commitSync} does). With the classic group protocol a commit still
     * waiting for the coordinator to be found is not awaited (the new protocol's consumer awaits it): it is sent
     * later, possibly after the new owner committed, and moves Kafka's offset back, behind the store (or, on a
     * topic created again meanwhile, is the old log's offset: the moment between a check and its commit,
     * longer). A failure is logged.
     */
    public void commitNow(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(onlyRecord ? offsets : Map.of());
        } catch (KafkaException e) {
            logFailure("offset commit on revoke for " + offsets.keySet(), e);
        }
    }

    /**
     * On close: without a store commits what is finished, with one waits for the commits already sent; waiting
     * at most {@code timeout}. A failure is logged.
     */
    public void commitFinal(Duration timeout) {
        if (finished.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(onlyRecord ? finished : Map.of(), timeout);
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
