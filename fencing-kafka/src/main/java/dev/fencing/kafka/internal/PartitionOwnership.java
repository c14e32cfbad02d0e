package dev.fencing.kafka.internal;

import dev.fencing.kafka.LogBehindStoreException;
import dev.fencing.kafka.StoreBehindKafkaException;
import dev.fencing.kafka.TopicRecreatedException;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The partitions this consumer owns and what it holds for each: the watermarks table, the offset the store
 * had when the partition was loaded or last committed, and the finished offset for Kafka. It takes
 * partitions (checking that the store's progress is of the topic Kafka has under that name now, loading the
 * store, checking that Kafka is not ahead of it, seeking to its offset), checks before progress is saved that
 * their topics were not created again since, reloads one after a rolled-back unit, and releases them on revoke
 * or loss. Poll thread only; {@link #held()} and
 * {@link #assignment()} may be read by any thread.
 */
public final class PartitionOwnership {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionOwnership.class);

    private final String groupId;
    private final WatermarkStore<?> store; // null: heap only
    private final Consumer<ByteBuffer, ByteBuffer> consumer;
    private final OffsetCommitter committer;
    // the current Kafka topic id of each of a set of topics (TopicIds#describe)
    private final Function<Collection<String>, Map<String, Uuid>> topicIds;
    // with a store: the Kafka topic id of each topic as it was when partitions of it were last taken
    private final Map<String, Uuid> takenIds = new HashMap<>();
    private final Map<TopicPartition, PartitionWatermarks> watermarks = new HashMap<>();
    private final Map<TopicPartition, Long> storedOffsets = new HashMap<>();
    // heap only: the tables of partitions given away, in case they come back (the only copy there is)
    private final Map<TopicPartition, PartitionWatermarks> parked = new HashMap<>();
    // where each owned partition is read again from after a rolled-back attempt: its last finished offset, or
    // the first offset polled since it was taken (nothing finished yet)
    private final Map<TopicPartition, Long> rewindPoints = new HashMap<>();
    private long progress; // finished offsets recorded
    private volatile int held;
    private volatile Set<TopicPartition> assignment = Set.of();

    public PartitionOwnership(
            String groupId,
            WatermarkStore<?> store,
            Consumer<ByteBuffer, ByteBuffer> consumer,
            OffsetCommitter committer,
            Function<Collection<String>, Map<String, Uuid>> topicIds) {
        this.groupId = groupId;
        this.store = store;
        this.consumer = consumer;
        this.committer = committer;
        this.topicIds = topicIds;
    }

    /** The partition's table, or null if this consumer does not own it. */
    public PartitionWatermarks watermarks(TopicPartition partition) {
        return watermarks.get(partition);
    }

    /** The store's offset of an owned partition as this consumer last saw it; -1 if none. */
    public long storedOffset(TopicPartition partition) {
        return storedOffsets.getOrDefault(partition, -1L);
    }

    /** After a committed unit: the store and Kafka are to continue at {@code nextOffset}. */
    public void finished(TopicPartition partition, long nextOffset) {
        storedOffsets.put(partition, nextOffset);
        rewindPoints.put(partition, nextOffset);
        committer.finished(partition, nextOffset);
        progress++;
    }

    /** How many times a finished offset was recorded: it changes when a unit or a progress commit succeeded. */
    public long progress() {
        return progress;
    }

    /**
     * After every poll: the first offset polled of a partition nothing of which has finished yet.
     *
     * @throws LogBehindStoreException if a partition's records start below the store's offset for it
     */
    public void polled(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        for (TopicPartition partition : records.partitions()) {
            long first = records.records(partition).get(0).offset();
            long stored = storedOffset(partition);
            // The consumer only ever seeks to the store's offset or past it, so only Kafka's own reset brings
            // records below it: the log no longer reaches that offset (a topic created again, a truncated log),
            // and the store's watermarks and applied offsets are of another log
            if (store != null && first < stored) {
                throw new LogBehindStoreException(groupId, partition, stored, first);
            }
            if (!rewindPoints.containsKey(partition) && watermarks.containsKey(partition)) {
                rewindPoints.put(partition, first);
            }
        }
    }

    /** A copy of where each owned partition would be read again from, for {@link #rewind}. */
    public Map<TopicPartition, Long> rewindPoints() {
        return new HashMap<>(rewindPoints);
    }

    /**
     * After partitions were released and taken again without leaving the group (a rolled-back attempt): those
     * the store has no offset for (heap only, or nothing committed yet) are read again from {@code points}; the
     * others were sought to the store's offset when taken.
     */
    public void rewind(Collection<TopicPartition> partitions, Map<TopicPartition, Long> points) {
        for (TopicPartition partition : partitions) {
            Long point = points.get(partition);
            if (point != null && watermarks.containsKey(partition) && storedOffset(partition) < 0) {
                consumer.seek(partition, point);
                rewindPoints.put(partition, point);
            }
        }
    }

    /** Watermarks held in memory, over the owned partitions. */
    public int held() {
        return held;
    }

    /** Adds to (or, negative, takes from) the count of held watermarks. */
    public void held(int delta) {
        held += delta;
    }

    /** The owned partitions, as of the last rebalance. */
    public Set<TopicPartition> assignment() {
        return assignment;
    }

    /**
     * Takes newly assigned partitions. With a store, Kafka's committed offsets are read before the store, so
     * that a commit racing with this never looks ahead.
     *
     * @throws TopicRecreatedException if the store holds a topic's progress under another topic id than the
     *     topic has now, or, with a store that keeps no ids, if this consumer took partitions of the topic before
     *     under another id; no partition is taken
     * @throws StoreBehindKafkaException if Kafka's committed offset is ahead of the store's
     */
    public void assign(Collection<TopicPartition> partitions) {
        try {
            if (store != null && !partitions.isEmpty()) {
                requireSameTopics(partitions);
            }
            Map<TopicPartition, OffsetAndMetadata> committed =
                    store == null || partitions.isEmpty() ? Map.of() : consumer.committed(Set.copyOf(partitions));
            for (TopicPartition partition : partitions) {
                take(partition, committed.get(partition));
            }
        } finally {
            assignment = Set.copyOf(watermarks.keySet());
        }
    }

    /**
     * Checks, before any of their offsets is read, that the store's progress of each topic of {@code partitions}
     * is of the topic Kafka has under that name now, recording the current id where the store has none: one
     * description of all the topics, then one call to the store per topic.
     */
    private void requireSameTopics(Collection<TopicPartition> partitions) {
        Set<String> topics = new TreeSet<>();
        for (TopicPartition partition : partitions) {
            topics.add(partition.topic());
        }
        Map<String, Uuid> current = topicIds.apply(topics);
        for (String topic : topics) {
            Uuid id = current.get(topic);
            if (id == null || Uuid.ZERO_UUID.equals(id)) {
                // a broker that keeps no topic ids (none before Kafka 2.8), or a topic deleted since the
                // assignment was made: nothing to compare
                continue;
            }
            Optional<Uuid> stored = store.recordTopicId(groupId, topic, id);
            if (stored.isPresent() && !stored.get().equals(id)) {
                throw new TopicRecreatedException(groupId, topic, stored.get(), id);
            }
            // a store that keeps no ids: the id this consumer found when it last took partitions of the topic is
            // the only one there is, and the check before each save compares with what is recorded here, so a
            // topic created again under a running consumer that takes its partitions again (after a rolled-back
            // attempt, in a rebalance) must not pass as the topic it took
            Uuid taken = takenIds.get(topic);
            if (stored.isEmpty() && taken != null && !taken.equals(id)) {
                throw new TopicRecreatedException(groupId, topic, taken, id);
            }
            takenIds.put(topic, id);
        }
    }

    /**
     * Checks, before {@code progress} is saved, that each of their topics still has the id it had
     * when its partitions were taken: one description of all the topics. Kafka's consumer compares no topic ids,
     * and one that did not poll while a topic was deleted and created again (a handler running all that time)
     * is assigned nothing new and reads the new log on from its position; the records read since the last check
     * may be the new log's. A topic Kafka does not have now, or whose id was not known when it was taken, is
     * not compared. No-op without a store.
     *
     * @throws TopicRecreatedException if a topic's id is now another; the finished offsets of its partitions are
     *     forgotten, not committed to the new topic
     * @throws dev.fencing.kafka.WatermarkStoreException if Kafka does not describe the topics in time
     */
    public void requireTopicsUnchanged(Collection<PartitionProgress> progress) {
        if (store == null || progress.isEmpty()) {
            return;
        }
        Set<String> topics = new TreeSet<>();
        for (PartitionProgress p : progress) {
            if (takenIds.containsKey(p.partition().topic())) {
                topics.add(p.partition().topic());
            }
        }
        if (topics.isEmpty()) {
            return;
        }
        Map<String, Uuid> current = topicIds.apply(topics);
        for (String topic : topics) {
            Uuid id = current.get(topic);
            Uuid taken = takenIds.get(topic);
            if (id != null && !Uuid.ZERO_UUID.equals(id) && !id.equals(taken)) {
                // Kafka's offsets under the name are the new topic's now: the old log's finished offsets are not
                // committed there when the consumer closes, or a start after the store's rows for the topic were
                // deleted would find Kafka ahead of the store
                for (TopicPartition owned : watermarks.keySet()) {
                    if (owned.topic().equals(topic)) {
                        committer.forget(owned);
                    }
                }
                throw new TopicRecreatedException(groupId, topic, taken, id);
            }
        }
    }

    /** After a rolled-back unit: reads the partition again from the store's offset, or from {@code firstOffset}. */
    public void reload(TopicPartition partition, long firstOffset) {
        if (!watermarks.containsKey(partition)) {
            return; // revoked meanwhile: its new owner reads it from the store
        }
        if (store == null) {
            consumer.seek(partition, firstOffset); // the rolled-back watermarks are right as they are
            return;
        }
        take(partition, consumer.committed(Set.of(partition)).get(partition));
        long stored = storedOffsets.get(partition);
        consumer.seek(partition, stored >= 0 ? stored : firstOffset);
    }

    /**
     * Gives partitions up; on revoke ({@code commit}) their finished offsets are committed first, without a store
     * (with one, the commits already sent are awaited: {@link OffsetCommitter#commitNow}).
     */
    public void release(Collection<TopicPartition> partitions, boolean commit) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition partition : partitions) {
            PartitionWatermarks dropped = watermarks.remove(partition);
            if (dropped != null) {
                held -= dropped.size();
                if (store == null) {
                    parked.put(partition, dropped);
                }
            }
            storedOffsets.remove(partition);
            rewindPoints.remove(partition);
            OffsetAndMetadata finished = committer.forget(partition);
            if (finished != null) {
                offsets.put(partition, finished);
            }
        }
        if (commit) {
            committer.commitNow(offsets);
        }
        assignment = Set.copyOf(watermarks.keySet());
        if (!partitions.isEmpty()) {
            LOG.info("group {} released {}{}", groupId, partitions, commit ? "" : " (lost)");
        }
    }

    /** Forgets everything, on close. */
    public void clear() {
        watermarks.clear();
        takenIds.clear();
        parked.clear();
        storedOffsets.clear();
        rewindPoints.clear();
        held = 0;
        assignment = Set.of();
    }

    private void take(TopicPartition partition, OffsetAndMetadata kafkaCommitted) {
        committer.forget(partition);
        rewindPoints.remove(partition);
        if (store == null) {
            PartitionWatermarks kept = parked.remove(partition);
            PartitionWatermarks own = kept != null ? kept : new PartitionWatermarks(Map.of());
            watermarks.put(partition, own);
            held += own.size();
            storedOffsets.put(partition, -1L);
            LOG.info("group {} took {} with {} watermarks kept from before", groupId, partition, own.size());
            return;
        }
        long started = System.nanoTime();
        boolean lazy = store.loadsLazily();
        PartitionState loaded = lazy
                ? new PartitionState(store.loadOffset(groupId, partition), Map.of())
                : store.load(groupId, partition);
        // some member handled records without this store: its watermarks miss their tokens
        if (kafkaCommitted != null && kafkaCommitted.offset() > Math.max(0, loaded.nextOffset())) {
            throw new StoreBehindKafkaException(groupId, partition, loaded.nextOffset(), kafkaCommitted.offset());
        }
        PartitionWatermarks table = lazy ? PartitionWatermarks.lazy() : new PartitionWatermarks(loaded.watermarks());
        PartitionWatermarks previous = watermarks.put(partition, table);
        held += table.size() - (previous == null ? 0 : previous.size());
        storedOffsets.put(partition, loaded.nextOffset());
        if (loaded.nextOffset() >= 0) {
            consumer.seek(partition, loaded.nextOffset());
            rewindPoints.put(partition, loaded.nextOffset());
        }
        LOG.info(
                "group {} took {} in {} ms with {}, next offset {}",
                groupId,
                partition,
                (System.nanoTime() - started) / 1_000_000,
                lazy ? "watermarks loaded as keys arrive" : table.size() + " watermarks",
                loaded.nextOffset() >= 0 ? loaded.nextOffset() : "from Kafka");
    }
}
