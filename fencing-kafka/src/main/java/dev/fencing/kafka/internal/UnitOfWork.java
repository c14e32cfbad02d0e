package dev.fencing.kafka.internal;

import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.FencedConsumerConfig;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The unit of work: handles the records of polls over up to {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG}
 * (or {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG} records) inside one store commit: locks each partition, loads missing watermarks, runs the {@link
 * RecordStep} on each record in offset order against the partition's table (its dead letters sent now and
 * awaited before the unit's save), then commits the raised watermarks and offsets with the handler's effects,
 * or rolls all of it back and rewinds. Poll thread only.
 */
public final class UnitOfWork<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(UnitOfWork.class);
    /** A poll inside a unit that brings nothing for this long ends the unit: the records stopped coming. */
    static final Duration IDLE = Duration.ofMillis(20);

    private final String groupId;
    private final WatermarkStore<Object> store; // null: heap only
    private final AppliedOffsetStore appliedOffsets; // null: the store keeps none
    private final RecordStep<K, V> step;
    private final boolean transactional;
    private final long commitMaxRecords;
    private final Duration commitInterval;
    private final Duration pollTimeout;
    private final int watermarkCacheMaxKeys;
    private final Consumer<ByteBuffer, ByteBuffer> consumer;
    private final Function<Duration, ConsumerRecords<ByteBuffer, ByteBuffer>> poll;
    private final BooleanSupplier running;
    private final PartitionOwnership ownership;
    private final OffsetCommitter committer;
    private final DeadLetterWriter deadLetters;
    private final ConsumerMeters meters;
    private final UnitEffects<Object> effects; // null unless the handler's effects are written at each unit's end
    private boolean unitOpen;
    private boolean unitAborted;

    /**
     * @param appliedOffsets the store's loads with applied offsets, if it keeps them: records a key-parallel
     *     member applied past the stored offset are skipped
     * @param poll polls the consumer (a rebalance failure thrown as itself)
     * @param running false once the consumer is closing: an open unit then commits what it has
     */
    public UnitOfWork(
            ConsumerSettings settings,
            WatermarkStore<Object> store,
            AppliedOffsetStore appliedOffsets,
            RecordStep<K, V> step,
            boolean transactional,
            Consumer<ByteBuffer, ByteBuffer> consumer,
            Function<Duration, ConsumerRecords<ByteBuffer, ByteBuffer>> poll,
            BooleanSupplier running,
            PartitionOwnership ownership,
            OffsetCommitter committer,
            DeadLetterWriter deadLetters,
            ConsumerMeters meters) {
        this.groupId = settings.groupId();
        this.store = store;
        this.appliedOffsets = appliedOffsets;
        this.step = step;
        this.transactional = transactional;
        this.commitMaxRecords = settings.commitMaxRecords();
        this.commitInterval = settings.commitInterval();
        this.pollTimeout = settings.pollTimeout();
        this.watermarkCacheMaxKeys = settings.watermarkCacheMaxKeys();
        this.consumer = consumer;
        this.poll = poll;
        this.running = running;
        this.ownership = ownership;
        this.committer = committer;
        this.deadLetters = deadLetters;
        this.meters = meters;
        @SuppressWarnings("unchecked") // the store is the handler's own: it gets its own unit of work back
        UnitEffects<Object> unitEffects = store instanceof UnitEffects<?> e ? (UnitEffects<Object>) e : null;
        this.effects = unitEffects;
    }

    /**
     * Handles one poll's records, and more polls' as {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG}
     * and {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG} allow, as one unit; commits it or rolls it
     * back.
     *
     * @throws RecordHandlingException if the handler failed (after committing what came before, for a plain
     *     handler)
     */
    public void run(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        Batch batch = new Batch();
        deadLetters.begin();
        unitOpen = true;
        unitAborted = false;
        try {
            if (store == null) {
                handleUnit(null, records, batch);
            } else {
                store.commit(groupId, tx -> handleUnit(tx, records, batch));
            }
        } catch (UnitAbortedException e) {
            rollback(batch);
            LOG.info("group {}: rebalance during a unit of work; it was rolled back and is read again", groupId);
            rewind(batch);
            return;
        } catch (PartitionTakenOverException e) {
            rollback(batch);
            LOG.warn("group {}: {}; reloading the batch's partitions from the store", groupId, e.getMessage());
            rewind(batch);
            if (batch.failure != null) {
                throw batch.failure;
            }
            return;
        } catch (RuntimeException | Error e) {
            // an Error from the handler rolls the unit back like an exception: the store's transaction is
            // undone, so the watermarks in memory must be too
            rollback(batch);
            throw e;
        } finally {
            unitOpen = false;
        }
        List<TopicPartition> saved = new ArrayList<>(batch.partitions.size());
        for (PartitionBatch p : batch.partitions.values()) {
            ownership.held(p.watermarks.commit() - p.watermarks.evictIfAbove(watermarkCacheMaxKeys, store != null));
            if (p.nextOffset >= 0) { // -1: a plain handler failed on the partition's first record
                ownership.finished(p.partition, p.nextOffset);
                saved.add(p.partition);
                p.watermarks.committedThrough(p.nextOffset);
            }
            meters.accepted(p.partition.topic(), p.accepted);
            meters.dropped(p.partition.topic(), p.dropped);
            for (Map.Entry<DeadLetterReason, Integer> d : p.deadLettered.entrySet()) {
                meters.deadLettered(p.partition.topic(), d.getKey().name(), d.getValue());
            }
        }
        committer.commitAsync(saved);
        if (batch.failure != null) {
            throw batch.failure;
        }
    }

    /**
     * One unit of work: the polled records and more polls, until the unit is {@value
     * FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG} old, holds {@value
     * FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG} records (if set), a poll brings nothing for {@link #IDLE},
     * or the consumer closes. A rebalance inside the unit aborts it. Its dead letters are awaited once, here, before the save
     * that passes them.
     */
    private List<PartitionProgress> handleUnit(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> first, Batch batch) {
        long deadline = System.nanoTime() + commitInterval.toNanos();
        ConsumerRecords<ByteBuffer, ByteBuffer> records = first;
        while (handlePolled(tx, records, batch)
                && (commitMaxRecords == 0 || batch.records < commitMaxRecords)
                && (effects == null || !effects.unitFull())
                && running.getAsBoolean()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                // not poll(0): a fetch still on its way would end the unit at once; not the whole poll timeout
                // either: once records stop coming, what the unit did is committed (and counted) at once
                long wait = Math.min(left, Math.min(pollTimeout.toNanos(), IDLE.toNanos()));
                records = poll.apply(Duration.ofNanos(wait));
            } catch (WakeupException e) {
                if (unitAborted) {
                    throw new UnitAbortedException(); // the same poll revoked partitions of this unit
                }
                break; // close() was called: commit what this unit did, then the loop ends
            }
            if (unitAborted) {
                // This poll's records are not in the unit; without a seek their partitions would move past them.
                for (TopicPartition partition : records.partitions()) {
                    if (ownership.watermarks(partition) != null) {
                        consumer.seek(
                                partition, records.records(partition).get(0).offset());
                    }
                }
                throw new UnitAbortedException();
            }
            if (records.isEmpty()) {
                break;
            }
        }
        if (effects != null) {
            refuseLate(tx, batch);
        }
        // no offset, in the store or in Kafka, passes a dead letter that was not acknowledged
        deadLetters.awaitAll();
        List<PartitionProgress> progress = new ArrayList<>(batch.partitions.size());
        for (PartitionBatch p : batch.partitions.values()) {
            if (p.nextOffset >= 0) {
                progress.add(new PartitionProgress(
                        p.partition,
                        ownership.storedOffset(p.partition),
                        p.nextOffset,
                        p.watermarks.raised(),
                        p.watermarks.raisedNew()));
            }
        }
        // last, so that every record of the unit was polled before it: one read since the topic was created
        // again is of the new log, and the unit rolls back instead of saving an offset past its first records
        ownership.requireTopicsUnchanged(progress);
        return progress;
    }

    /** Returns false if a plain handler failed: the unit stops at that record. */
    private boolean handlePolled(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> records, Batch batch) {
        if (effects != null) {
            batch.polls.add(records);
        }
        Set<TopicPartition> polled = records.partitions();
        // before any lock: a lock that fails leaves the partitions after it unopened, and the rewind must
        // still seek them back to these records, or the next unit would commit past them
        for (TopicPartition partition : polled) {
            batch.polledFirst.putIfAbsent(
                    partition, records.records(partition).get(0).offset());
        }
        if (polled.size() > 1) {
            // partition locks are row locks: take them in one global order so two members never wait on each other
            List<TopicPartition> ordered = new ArrayList<>(polled);
            ordered.sort(PARTITION_ORDER);
            for (TopicPartition partition : ordered) {
                open(tx, partition, records.records(partition).get(0).offset(), batch);
            }
        }
        for (TopicPartition partition : polled) {
            List<ConsumerRecord<ByteBuffer, ByteBuffer>> partitionRecords = records.records(partition);
            PartitionBatch p = open(tx, partition, partitionRecords.get(0).offset(), batch);
            if (!p.watermarks.complete()) {
                ownership.held(
                        appliedOffsets != null
                                ? MissingWatermarks.loadSerial(
                                        appliedOffsets, groupId, partition, p.watermarks, partitionRecords)
                                : MissingWatermarks.load(
                                        store, groupId, partition, p.watermarks, p.watermarks, partitionRecords));
            }
            for (ConsumerRecord<ByteBuffer, ByteBuffer> record : partitionRecords) {
                if (!handleRecord(tx, record, p.watermarks, p, batch)) {
                    return false;
                }
                p.nextOffset = record.offset() + 1;
                batch.records++;
            }
        }
        return true;
    }

    /**
     * The unit's state of a partition, made when its first record arrives. With a store the unit first locks
     * the partition: it locks the partition's stored progress until the unit ends and checks that nobody
     * committed it since this consumer loaded it, so a member that was expelled from the group (a zombie)
     * waits or fails here, before its handler touches any record of the partition.
     */
    private PartitionBatch open(Object tx, TopicPartition partition, long firstOffset, Batch batch) {
        PartitionBatch p = batch.partitions.get(partition);
        if (p != null) {
            return p;
        }
        PartitionWatermarks current = ownership.watermarks(partition);
        if (current == null) {
            throw new IllegalStateException("records of " + partition + " arrived before its watermarks");
        }
        // in the unit before the lock: if the lock fails, the rewind must still seek back to these records
        p = new PartitionBatch(partition, current);
        p.firstOffset = firstOffset;
        batch.partitions.put(partition, p);
        current.begin();
        if (store != null) {
            store.lockPartition(tx, groupId, partition, ownership.storedOffset(partition));
        }
        return p;
    }

    /**
     * Returns false if the handler failed and the batch must stop here (plain handlers only). The key is read
     * where the fetch put it; a new key is copied before the handler runs (a {@code ByteBuffer} or {@code
     * byte[]} handler sees the fetched bytes and could change them).
     */
    private boolean handleRecord(
            Object tx,
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            PartitionWatermarks current,
            PartitionBatch p,
            Batch batch) {
        ByteBuffer keyBuffer = record.key();
        int slot = PartitionWatermarks.NONE;
        // the key the record raises: a new key's copy, or the table's own array of a found one, taken now (the
        // handler may change the fetched bytes, KeyMutatingHandlerIT); raise checks that the slot still holds it
        byte[] key = null;
        if (keyBuffer != null) {
            int keyLength = keyBuffer.remaining();
            if (keyBuffer.hasArray()) {
                byte[] keyArray = keyBuffer.array();
                int keyOffset = keyBuffer.arrayOffset() + keyBuffer.position();
                slot = current.find(keyArray, keyOffset, keyLength);
                key = slot == PartitionWatermarks.NONE
                        ? Arrays.copyOfRange(keyArray, keyOffset, keyOffset + keyLength)
                        : current.key(slot);
            } else {
                byte[] keyArray = FetchedBytes.copy(keyBuffer);
                slot = current.find(keyArray, 0, keyLength);
                key = slot == PartitionWatermarks.NONE ? keyArray : current.key(slot);
            }
        }
        if (key != null && current.appliedBefore(key, record.offset())) {
            // a key-parallel member applied it (or refused it) before this consumer took the partition
            step.appliedBefore(record);
            return true;
        }
        long raise;
        try {
            raise = step.apply(tx, record, current.current(slot), p);
        } catch (RecordHandlingException e) {
            if (transactional) {
                throw e;
            }
            batch.failure = e;
            return false;
        }
        if (raise != RecordStep.REFUSED) {
            current.raise(key, slot, raise);
        }
        return true;
    }

    /**
     * Writes the handler's effects of the unit ({@link UnitEffects}); a record whose effect the resource refused
     * is stale after all: dropped or dead-lettered like one the fence refused (the dead letter awaited with the
     * unit's others, before the save), its offset committed with the unit. Its key's watermark stays as raised:
     * the resource holds at least that token.
     */
    private void refuseLate(Object tx, Batch batch) {
        for (UnitEffects.Refusal refusal : effects.finishUnit(tx)) {
            PartitionBatch p = batch.partitions.get(refusal.partition());
            ConsumerRecord<ByteBuffer, ByteBuffer> record = batch.polled(refusal.partition(), refusal.offset());
            p.accepted--;
            // the token the record was handled under, not its header as the handler may have left it
            Header handledUnder = new RecordHeader(FenceTokenHeader.NAME, FenceTokenHeader.encode(refusal.token()));
            step.refuse(record, FenceDecision.STALE, handledUnder, refusal.storedToken(), p);
        }
    }

    private void rollback(Batch batch) {
        for (PartitionBatch p : batch.partitions.values()) {
            p.watermarks.rollback();
        }
    }

    /** After a rolled-back unit: reload what the store has and read again from there. */
    private void rewind(Batch batch) {
        for (PartitionBatch p : batch.partitions.values()) {
            ownership.reload(p.partition, p.firstOffset);
        }
        for (Map.Entry<TopicPartition, Long> polled : batch.polledFirst.entrySet()) {
            // polled but never opened (a lock before it failed): nothing to reload, only the position to undo
            if (!batch.partitions.containsKey(polled.getKey()) && ownership.watermarks(polled.getKey()) != null) {
                consumer.seek(polled.getKey(), polled.getValue());
            }
        }
    }

    /** Called by the rebalance callbacks: a unit open across a rebalance is rolled back. */
    public void abortIfOpen() {
        if (unitOpen) {
            unitAborted = true;
        }
    }

    /** Rolls back a unit of work that spanned a rebalance. */
    private static final class UnitAbortedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnitAbortedException() {
            super("rebalance during a unit of work", null, false, false);
        }
    }

    private static final Comparator<TopicPartition> PARTITION_ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private static final class Batch {
        final Map<TopicPartition, PartitionBatch> partitions = new LinkedHashMap<>();
        // the first offset polled of every partition in the unit, opened or not
        final Map<TopicPartition, Long> polledFirst = new HashMap<>();
        // the unit's polls, kept while its effects are unwritten ({@link UnitEffects})
        final List<ConsumerRecords<ByteBuffer, ByteBuffer>> polls = new ArrayList<>();
        long records;
        RecordHandlingException failure;

        /** The record the unit polled at this offset. */
        ConsumerRecord<ByteBuffer, ByteBuffer> polled(TopicPartition partition, long offset) {
            for (ConsumerRecords<ByteBuffer, ByteBuffer> poll : polls) {
                for (ConsumerRecord<ByteBuffer, ByteBuffer> record : poll.records(partition)) {
                    if (record.offset() == offset) {
                        return record;
                    }
                }
            }
            throw new IllegalStateException("the unit holds no record of " + partition + " at offset " + offset);
        }
    }

    private static final class PartitionBatch implements RecordStep.Tally {
        final TopicPartition partition;
        final PartitionWatermarks watermarks;
        final Map<DeadLetterReason, Integer> deadLettered = new HashMap<>();
        long firstOffset = -1;
        long nextOffset = -1;
        long accepted;
        long dropped;

        PartitionBatch(TopicPartition partition, PartitionWatermarks watermarks) {
            this.partition = partition;
            this.watermarks = watermarks;
        }

        @Override
        public void accepted() {
            accepted++;
        }

        @Override
        public void dropped() {
            dropped++;
        }

        @Override
        public void deadLettered(DeadLetterReason reason) {
            deadLettered.merge(reason, 1, Integer::sum);
        }
    }
}
