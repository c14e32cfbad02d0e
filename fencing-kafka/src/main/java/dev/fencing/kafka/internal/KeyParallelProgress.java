package dev.fencing.kafka.internal;

import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key-parallel consumer's progress commits: moves each partition's {@link OffsetFrontier} past its finished
 * records, keeps the watermarks those raised until a store commit has taken them, commits the partitions'
 * offsets (with those watermarks) to the store, locking each, and then to Kafka; and drops the watermarks of
 * idle partitions that hold too many. What a store receives for a partition is always the offset together with
 * exactly the watermarks raised below it. Poll thread only.
 */
final class KeyParallelProgress {
    private static final Logger LOG = LoggerFactory.getLogger(KeyParallelProgress.class);
    private static final Comparator<TopicPartition> PARTITION_ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private final String groupId;
    private final WatermarkStore<Object> store; // null: heap only
    private final PartitionOwnership ownership;
    private final OffsetCommitter committer;
    private final int watermarkCacheMaxKeys;
    // raised watermarks that passed the frontier but whose store commit has not succeeded yet (plain handlers)
    private final Map<TopicPartition, Map<Bytes, Long>> unsaved = new HashMap<>();

    KeyParallelProgress(
            String groupId,
            WatermarkStore<Object> store,
            PartitionOwnership ownership,
            OffsetCommitter committer,
            int watermarkCacheMaxKeys) {
        this.groupId = groupId;
        this.store = store;
        this.ownership = ownership;
        this.committer = committer;
        this.watermarkCacheMaxKeys = watermarkCacheMaxKeys;
    }

    /** Forgets what a partition raised and did not save (given up, or read again from the store). */
    void forget(TopicPartition partition) {
        unsaved.remove(partition);
    }

    /**
     * Moves the partition's frontier past its finished records, keeping what they raised for the next store
     * commit; returns the offset to commit.
     */
    long advance(ParallelPartition p) {
        Map<Bytes, Long> raised = unsaved.computeIfAbsent(p.partition, k -> new HashMap<>());
        return p.advance((key, token) -> raised.merge(Bytes.wrap(key), token, Math::max));
    }

    /**
     * Commits each partition's frontier (and, for plain handlers, the watermarks raised below it) to the store
     * and then to Kafka. Returns null, or the partition the store found committed by another member (then
     * nothing was saved; the caller must read that partition again, and the others' progress waits for the
     * next commit).
     */
    TopicPartition save(Collection<ParallelPartition> which, Function<TopicPartition, ParallelPartition> current) {
        List<PartitionProgress> progress = new ArrayList<>();
        for (ParallelPartition p : which) {
            long next = advance(p);
            Map<Bytes, Long> raised = unsaved.get(p.partition);
            if (next >= 0 && (next != ownership.storedOffset(p.partition) || !raised.isEmpty())) {
                progress.add(new PartitionProgress(p.partition, ownership.storedOffset(p.partition), next, raised));
            }
        }
        if (progress.isEmpty()) {
            return null;
        }
        progress.sort(Comparator.comparing(PartitionProgress::partition, PARTITION_ORDER));
        // the records below these offsets were polled before this: one of a topic created again since it was
        // taken may be the new log's, and its offset must not pass the new log's first records
        ownership.requireTopicsUnchanged(progress);
        if (store != null) {
            try {
                store.commit(groupId, tx -> {
                    for (PartitionProgress p : progress) {
                        store.lockPartition(tx, groupId, p.partition(), p.expectedOffset());
                    }
                    return progress;
                });
            } catch (PartitionTakenOverException e) {
                // another member committed the partition: this one lost it without being told yet
                LOG.warn(
                        "group {}: {}; the partition's records in flight are dropped and it is read again from"
                                + " the store",
                        groupId,
                        e.getMessage());
                return e.partition();
            }
        }
        for (PartitionProgress p : progress) {
            ownership.finished(p.partition(), p.nextOffset());
            unsaved.remove(p.partition());
            ParallelPartition part = current.apply(p.partition());
            if (part != null && part.watermarks != null) {
                synchronized (part) {
                    ownership.held(part.watermarks.commit());
                }
            }
        }
        List<TopicPartition> saved = new ArrayList<>(progress.size());
        for (PartitionProgress p : progress) {
            saved.add(p.partition());
        }
        committer.commitAsync(saved);
        return null;
    }

    /**
     * Drops the watermarks of a partition holding more than the cache allows, once it is idle and everything
     * it raised is saved: with a store they are loaded again as their keys come back.
     */
    void evictIdle(Collection<ParallelPartition> which) {
        for (ParallelPartition p : which) {
            Map<Bytes, Long> waiting = unsaved.get(p.partition);
            if (p.watermarks == null || (waiting != null && !waiting.isEmpty())) {
                continue;
            }
            synchronized (p) {
                if (p.inFlight() == 0 && p.held() == 0 && p.watermarks.slots() > watermarkCacheMaxKeys) {
                    ownership.held(p.watermarks.commit());
                    ownership.held(-p.watermarks.evictIfAbove(watermarkCacheMaxKeys, store != null));
                }
            }
        }
    }
}
