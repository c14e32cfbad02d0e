package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import java.nio.ByteBuffer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Handles one record on a key-parallel worker thread, by the serial consumer's rules: the fence decision
 * ({@link FenceDecision}), refused records to the dead-letter topic (or dropped, for stale ones under {@link
 * StaleRecordPolicy#DROP}), accepted ones to the handler, and the key's watermark raised only after the
 * handler returned. With a plain handler the decision reads the partition's watermarks table; with a
 * transactional one the store decides in the record's own transaction ({@link RecordTransactions}). A
 * record counts as finished only when this returns; a refusal's dead letter is acknowledged by then.
 * Thread-safe: records of one key never run at the same time, and the table is touched under its
 * partition's monitor.
 */
public final class KeyParallelWorker<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(KeyParallelWorker.class);

    private final String groupId;
    private final TransactionalRecordHandler<Object, K, V> handler;
    private final RecordTransactions<Object> transactions; // null: plain handler
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final FencePolicy policy;
    private final StaleRecordPolicy stalePolicy;
    private final DeadLetterWriter deadLetters;

    public KeyParallelWorker(
            ConsumerSettings settings,
            TransactionalRecordHandler<Object, K, V> handler,
            RecordTransactions<Object> transactions,
            Deserializer<K> keyDeserializer,
            Deserializer<V> valueDeserializer,
            DeadLetterWriter deadLetters) {
        this.groupId = settings.groupId();
        this.handler = handler;
        this.transactions = transactions;
        this.keyDeserializer = keyDeserializer;
        this.valueDeserializer = valueDeserializer;
        this.policy = settings.policy();
        this.stalePolicy = settings.staleRecords();
        this.deadLetters = deadLetters;
    }

    /**
     * Decides and handles one record, then reports it finished to its partition.
     *
     * @throws RecordHandlingException if the handler failed (the record stays unfinished)
     * @throws dev.fencing.kafka.DeadLetterException if a refusal could not be dead-lettered
     * @throws dev.fencing.kafka.WatermarkStoreException if the store failed
     */
    void process(ParallelPartition p, ParallelPartition.Item item) {
        ConsumerRecord<ByteBuffer, ByteBuffer> record = item.record;
        Header header = record.headers().lastHeader(FenceTokenHeader.NAME);
        if (transactions != null) {
            processInTransaction(p, item, header);
            return;
        }
        PartitionWatermarks.Mark mark = null;
        long watermark = 0;
        if (item.key != null) {
            synchronized (p) {
                mark = p.watermarks.find(item.key);
            }
            watermark = mark == null ? 0 : mark.current();
        }
        long token = FenceDecision.decide(item.key != null, header, watermark, policy);
        if (!FenceDecision.accepted(token)) {
            refuse(p, item, token, header, watermark);
            p.finished(item, null, 0);
            return;
        }
        Typed<K, V> typed = deserialize(record);
        if (typed.record() == null) {
            // as in the serial consumer: the token passed the fence, so its holder exists and older ones are stale
            raise(p, item, mark, token);
            deadLetter(p, record, DeadLetterReason.UNREADABLE_RECORD, typed.failure());
            p.finished(item, item.key, token);
            return;
        }
        handle(null, typed.record(), token);
        raise(p, item, mark, token);
        p.countAccepted();
        p.finished(item, item.key, token);
    }

    private void processInTransaction(ParallelPartition p, ParallelPartition.Item item, Header header) {
        ConsumerRecord<ByteBuffer, ByteBuffer> record = item.record;
        // a missing key or token, or an unreadable one, is refused whatever the key's stored watermark
        long token = FenceDecision.decide(item.key != null, header, 0, policy);
        if (!FenceDecision.accepted(token)) {
            refuse(p, item, token, header, 0);
            p.finished(item, null, 0);
            return;
        }
        Typed<K, V> typed = deserialize(record);
        long outcome = transactions.applyOnce(groupId, p.partition, item.key, record.offset(), token, policy, tx -> {
            if (typed.record() == null) {
                // inside the transaction: acknowledged before the key's applied offset passes this record
                deadLetters.sendAndAwait(record, DeadLetterReason.UNREADABLE_RECORD, typed.failure());
            } else {
                handle(tx, typed.record(), token);
            }
        });
        if (outcome == RecordTransactions.APPLIED) {
            if (typed.record() == null) {
                p.countDeadLettered(DeadLetterReason.UNREADABLE_RECORD);
            } else {
                p.countAccepted();
            }
        } else if (outcome == RecordTransactions.APPLIED_BEFORE) {
            LOG.debug(
                    "group {}: {}-{}@{} was applied before (its key's applied offset is at or past it); skipped",
                    groupId,
                    record.topic(),
                    record.partition(),
                    record.offset());
        } else {
            refuse(p, item, FenceDecision.STALE, header, outcome);
        }
        p.finished(item, null, 0);
    }

    private void handle(Object tx, ConsumerRecord<K, V> typed, long token) {
        try {
            handler.handle(tx, typed, token);
        } catch (Throwable e) { // checked ones too, from a handler that throws them sneakily
            throw new RecordHandlingException(
                    new TopicPartition(typed.topic(), typed.partition()), typed.offset(), token, e);
        }
    }

    private static void raise(
            ParallelPartition p, ParallelPartition.Item item, PartitionWatermarks.Mark mark, long token) {
        synchronized (p) {
            // a new key's array is ours (copied at dispatch): the table may keep it
            p.watermarks.raise(mark == null ? item.key : null, mark, token);
        }
    }

    private void refuse(ParallelPartition p, ParallelPartition.Item item, long verdict, Header header, long watermark) {
        DeadLetterReason reason = FenceDecision.reason(verdict);
        String detail = FenceDecision.detail(verdict, header, watermark, item.key);
        if (reason == DeadLetterReason.STALE_TOKEN && stalePolicy == StaleRecordPolicy.DROP) {
            p.countDropped();
            LOG.debug(
                    "group {} dropped {}-{}@{}: {}",
                    groupId,
                    item.record.topic(),
                    item.record.partition(),
                    item.record.offset(),
                    detail);
            return;
        }
        deadLetter(p, item.record, reason, detail);
    }

    private void deadLetter(
            ParallelPartition p,
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            DeadLetterReason reason,
            String detail) {
        deadLetters.sendAndAwait(record, reason, detail);
        p.countDeadLettered(reason);
    }

    /** A deserialized record, or (record null) why a deserializer refused it. */
    private record Typed<K, V>(ConsumerRecord<K, V> record, String failure) {}

    /** The typed record, or why a deserializer refused it; the fetched buffers are left as they were. */
    private Typed<K, V> deserialize(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        ByteBuffer key = record.key();
        ByteBuffer value = record.value();
        int keyPosition = key == null ? 0 : key.position();
        int keyLimit = key == null ? 0 : key.limit();
        int valuePosition = value == null ? 0 : value.position();
        int valueLimit = value == null ? 0 : value.limit();
        try {
            return new Typed<>(
                    new ConsumerRecord<>(
                            record.topic(),
                            record.partition(),
                            record.offset(),
                            record.timestamp(),
                            record.timestampType(),
                            record.serializedKeySize(),
                            record.serializedValueSize(),
                            keyDeserializer.deserialize(record.topic(), record.headers(), key),
                            valueDeserializer.deserialize(record.topic(), record.headers(), value),
                            record.headers(),
                            record.leaderEpoch()),
                    null);
        } catch (Exception e) { // checked ones too, from a deserializer that throws them sneakily
            // a deserializer may have read part of a buffer: the dead letter gets all of it
            if (key != null) {
                key.limit(keyLimit).position(keyPosition);
            }
            if (value != null) {
                value.limit(valueLimit).position(valuePosition);
            }
            return new Typed<>(null, "deserializer failed: " + e);
        }
    }
}
