package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.FencedConsumerConfig;
import dev.fencing.kafka.PartitionProgress;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.StalePartitionStateException;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.WatermarkStore;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
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
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The unit of work: handles a poll's records (and, with {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG},
 * more polls') inside one store commit: claims each partition, loads missing watermarks, decides each record
 * ({@link FenceDecision}), hands accepted ones to the handler and refused ones to the {@link DeadLetterWriter},
 * then commits the raised watermarks and offsets with the handler's effects, or rolls all of it back and
 * rewinds. Poll thread only.
 */
public final class UnitOfWork<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(UnitOfWork.class);

    private final String groupId;
    private final WatermarkStore<Object> store; // null: heap only
    private final TransactionalRecordHandler<Object, K, V> handler;
    private final boolean transactional;
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final FencePolicy policy;
    private final StaleRecordPolicy stalePolicy;
    private final long commitMaxRecords;
    private final Duration commitInterval;
    private final int watermarkCacheMaxKeys;
    private final Consumer<ByteBuffer, ByteBuffer> consumer;
    private final Function<Duration, ConsumerRecords<ByteBuffer, ByteBuffer>> poll;
    private final BooleanSupplier running;
    private final PartitionOwnership ownership;
    private final OffsetCommitter committer;
    private final DeadLetterWriter deadLetters;
    private final ConsumerMeters meters;
    private boolean unitOpen;
    private boolean unitAborted;

    /**
     * @param poll polls the consumer (a rebalance failure thrown as itself)
     * @param running false once the consumer is closing: an open unit then commits what it has
     */
    public UnitOfWork(
            ConsumerSettings settings,
            WatermarkStore<Object> store,
            TransactionalRecordHandler<Object, K, V> handler,
            boolean transactional,
            Deserializer<K> keyDeserializer,
            Deserializer<V> valueDeserializer,
            Consumer<ByteBuffer, ByteBuffer> consumer,
            Function<Duration, ConsumerRecords<ByteBuffer, ByteBuffer>> poll,
            BooleanSupplier running,
            PartitionOwnership ownership,
            OffsetCommitter committer,
            DeadLetterWriter deadLetters,
            ConsumerMeters meters) {
        this.groupId = settings.groupId();
        this.store = store;
        this.handler = handler;
        this.transactional = transactional;
        this.keyDeserializer = keyDeserializer;
        this.valueDeserializer = valueDeserializer;
        this.policy = settings.policy();
        this.stalePolicy = settings.staleRecords();
        this.commitMaxRecords = settings.commitMaxRecords();
        this.commitInterval = settings.commitInterval();
        this.watermarkCacheMaxKeys = settings.watermarkCacheMaxKeys();
        this.consumer = consumer;
        this.poll = poll;
        this.running = running;
        this.ownership = ownership;
        this.committer = committer;
        this.deadLetters = deadLetters;
        this.meters = meters;
    }

    /**
     * Handles one poll's records, and more polls' as {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG}
     * allows, as one unit; commits it or rolls it back.
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
        } catch (StalePartitionStateException e) {
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
        for (PartitionBatch p : batch.partitions.values()) {
            ownership.held(p.watermarks.commit() - p.watermarks.evictIfAbove(watermarkCacheMaxKeys, store != null));
            if (p.nextOffset >= 0) { // -1: a plain handler failed on the partition's first record
                ownership.finished(p.partition, p.nextOffset);
            }
            meters.accepted(p.partition.topic(), p.accepted);
            meters.dropped(p.partition.topic(), p.dropped);
            for (Map.Entry<DeadLetterReason, Integer> d : p.deadLettered.entrySet()) {
                meters.deadLettered(p.partition.topic(), d.getKey().name(), d.getValue());
            }
        }
        committer.commitAsync();
        if (batch.failure != null) {
            throw batch.failure;
        }
    }

    /**
     * One unit of work: the polled records and, with {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG},
     * more polls until the unit is big or old enough. A rebalance inside the unit aborts it.
     */
    private List<PartitionProgress> handleUnit(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> first, Batch batch) {
        long deadline = System.nanoTime() + commitInterval.toNanos();
        ConsumerRecords<ByteBuffer, ByteBuffer> records = first;
        while (handlePolled(tx, records, batch)
                && batch.records < commitMaxRecords
                && System.nanoTime() < deadline
                && running.getAsBoolean()) {
            try {
                records = poll.apply(Duration.ZERO);
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
        deadLetters.awaitAll();
        List<PartitionProgress> progress = new ArrayList<>(batch.partitions.size());
        for (PartitionBatch p : batch.partitions.values()) {
            if (p.nextOffset >= 0) {
                progress.add(new PartitionProgress(
                        p.partition, ownership.storedOffset(p.partition), p.nextOffset, p.watermarks.raised()));
            }
        }
        return progress;
    }

    /** Returns false if a plain handler failed: the unit stops at that record. */
    private boolean handlePolled(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> records, Batch batch) {
        Set<TopicPartition> polled = records.partitions();
        // before any claim: a claim that fails leaves the partitions after it unopened, and the rewind must
        // still seek them back to these records, or the next unit would commit past them
        for (TopicPartition partition : polled) {
            batch.polledFirst.putIfAbsent(
                    partition, records.records(partition).get(0).offset());
        }
        if (polled.size() > 1) {
            // claims lock rows: take them in one global order so two members never wait on each other
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
                loadMissingKeys(p, partitionRecords);
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
     * The unit's state of a partition, made when its first record arrives. With a store the unit first claims
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
        // in the unit before the claim: if the claim fails, the rewind must still seek back to these records
        p = new PartitionBatch(partition, current);
        p.firstOffset = firstOffset;
        batch.partitions.put(partition, p);
        current.begin();
        if (store != null) {
            store.claim(tx, groupId, partition, ownership.storedOffset(partition));
        }
        return p;
    }

    /**
     * Lazy loading: gives every key of these records that the partition's table does not hold a mark, with
     * its stored token or none, in one store call. Runs after the partition's claim, so what the store returns
     * cannot be overtaken by another member's commit during this unit.
     */
    private void loadMissingKeys(PartitionBatch p, List<ConsumerRecord<ByteBuffer, ByteBuffer>> records) {
        Set<Bytes> missing = null;
        for (ConsumerRecord<ByteBuffer, ByteBuffer> record : records) {
            ByteBuffer key = record.key();
            if (key == null) {
                continue;
            }
            byte[] array = key.hasArray() ? key.array() : bytes(key);
            int offset = key.hasArray() ? key.arrayOffset() + key.position() : 0;
            int length = key.remaining();
            if (p.watermarks.find(array, offset, length) == null) {
                if (missing == null) {
                    missing = new HashSet<>();
                }
                // a copy: the handler may change the fetched bytes, the table keeps this array
                missing.add(Bytes.wrap(Arrays.copyOfRange(array, offset, offset + length)));
            }
        }
        if (missing == null) {
            return;
        }
        Map<Bytes, Long> found = store.loadWatermarks(groupId, p.partition, missing);
        for (Bytes key : missing) {
            p.watermarks.load(key.get(), found.getOrDefault(key, 0L));
        }
        ownership.held(found.size());
    }

    /** Returns false if the handler failed and the batch must stop here (plain handlers only). */
    private boolean handleRecord(
            Object tx,
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            PartitionWatermarks current,
            PartitionBatch p,
            Batch batch) {
        ByteBuffer keyBuffer = record.key();
        byte[] keyArray = null;
        int keyOffset = 0;
        int keyLength = 0;
        boolean keyCopied = false;
        PartitionWatermarks.Mark mark = null;
        if (keyBuffer != null) {
            keyLength = keyBuffer.remaining();
            keyCopied = !keyBuffer.hasArray();
            if (keyCopied) {
                keyArray = bytes(keyBuffer);
            } else {
                keyArray = keyBuffer.array();
                keyOffset = keyBuffer.arrayOffset() + keyBuffer.position();
            }
            mark = current.find(keyArray, keyOffset, keyLength);
        }
        long watermark = mark == null ? 0 : mark.current();
        Header header = record.headers().lastHeader(FenceTokenHeader.NAME);
        long token = FenceDecision.decide(keyBuffer != null, header, watermark, policy);
        if (!FenceDecision.accepted(token)) {
            refuse(record, token, header, watermark, p, batch);
            return true;
        }
        // A new key is copied before the handler runs: a ByteBuffer or byte[] handler sees the fetched bytes
        // and could change them.
        byte[] newKey = mark != null
                ? null
                : keyCopied ? keyArray : Arrays.copyOfRange(keyArray, keyOffset, keyOffset + keyLength);
        ByteBuffer valueBuffer = record.value();
        int valuePosition = valueBuffer == null ? 0 : valueBuffer.position();
        int valueLimit = valueBuffer == null ? 0 : valueBuffer.limit();
        int keyPosition = keyBuffer.position();
        int keyLimit = keyBuffer.limit();
        ConsumerRecord<K, V> typed;
        try {
            typed = deserialize(record);
        } catch (RuntimeException e) {
            // a deserializer may have read part of a buffer: the dead letter gets all of it
            keyBuffer.limit(keyLimit).position(keyPosition);
            if (valueBuffer != null) {
                valueBuffer.limit(valueLimit).position(valuePosition);
            }
            // The token passed the fence: its holder exists, so a record under an older token is stale whether
            // or not this one could be read. Not raising here would let the paused ex-holder's later record in.
            current.raise(newKey, mark, token);
            deadLetter(record, DeadLetterReason.UNREADABLE_RECORD, "deserializer failed: " + e, p, batch);
            return true;
        }
        try {
            handler.handle(tx, typed, token);
        } catch (RuntimeException | Error e) {
            RecordHandlingException failure = new RecordHandlingException(p.partition, record.offset(), token, e);
            if (transactional) {
                throw failure;
            }
            batch.failure = failure;
            return false;
        }
        current.raise(newKey, mark, token);
        p.accepted++;
        return true;
    }

    /** The slow path: what a refused record gets, with a detail a person can act on. */
    private void refuse(
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            long verdict,
            Header header,
            long watermark,
            PartitionBatch p,
            Batch batch) {
        DeadLetterReason reason = FenceDecision.reason(verdict);
        String detail = FenceDecision.detail(verdict, header, watermark, bytes(record.key()));
        if (reason == DeadLetterReason.STALE_TOKEN && stalePolicy == StaleRecordPolicy.DROP) {
            p.dropped++;
            LOG.debug(
                    "group {} dropped {}-{}@{}: {}",
                    groupId,
                    record.topic(),
                    record.partition(),
                    record.offset(),
                    detail);
            return;
        }
        deadLetter(record, reason, detail, p, batch);
    }

    private ConsumerRecord<K, V> deserialize(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        K key = keyDeserializer.deserialize(record.topic(), record.headers(), record.key());
        V value = valueDeserializer.deserialize(record.topic(), record.headers(), record.value());
        return new ConsumerRecord<>(
                record.topic(),
                record.partition(),
                record.offset(),
                record.timestamp(),
                record.timestampType(),
                record.serializedKeySize(),
                record.serializedValueSize(),
                key,
                value,
                record.headers(),
                record.leaderEpoch());
    }

    private void deadLetter(
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            DeadLetterReason reason,
            String detail,
            PartitionBatch p,
            Batch batch) {
        deadLetters.send(record, reason, detail);
        p.deadLettered.merge(reason, 1, Integer::sum);
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
            // polled but never opened (a claim before it failed): nothing to reload, only the position to undo
            if (!batch.partitions.containsKey(polled.getKey()) && ownership.watermarks(polled.getKey()) != null) {
                consumer.seek(polled.getKey(), polled.getValue());
            }
        }
    }

    /** The buffer's remaining bytes, copied; the buffer is not moved. */
    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
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
        long records;
        RecordHandlingException failure;
    }

    private static final class PartitionBatch {
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
    }
}
