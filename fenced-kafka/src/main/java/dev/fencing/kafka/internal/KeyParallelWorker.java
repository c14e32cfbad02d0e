package dev.fencing.kafka.internal;

import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.RecordHandlingException;
import java.nio.ByteBuffer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the {@link RecordStep} for one record on a key-parallel worker thread, and reports the record finished to
 * its partition. A refusal's dead letter is acknowledged before the record counts as finished (the step's sink
 * awaits each one). With a plain handler the step decides against the partition's watermarks table, read and
 * raised under the partition's monitor, and the key's watermark is raised only after the handler returned; with
 * a transactional one the store decides in the record's own transaction ({@link RecordTransactions}).
 * Thread-safe: records of one key never run at the same time.
 */
public final class KeyParallelWorker<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(KeyParallelWorker.class);

    private final String groupId;
    private final RecordStep<K, V> step;
    private final RecordTransactions<Object> transactions; // null: plain handler

    public KeyParallelWorker(
            ConsumerSettings settings, RecordStep<K, V> step, RecordTransactions<Object> transactions) {
        this.groupId = settings.groupId();
        this.step = step;
        this.transactions = transactions;
    }

    /**
     * Decides and handles one record, then reports it finished to its partition.
     *
     * @throws RecordHandlingException if the handler failed (the record stays unfinished)
     * @throws dev.fencing.kafka.DeadLetterException if a refusal could not be dead-lettered
     * @throws dev.fencing.kafka.WatermarkStoreException if the store failed
     */
    void process(ParallelPartition p, ParallelPartition.Item item) {
        if (transactions != null) {
            processInTransaction(p, item);
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
        long raise = step.apply(null, item.record, watermark, p);
        if (raise == RecordStep.REFUSED) {
            p.finished(item, null, 0);
            return;
        }
        synchronized (p) {
            // a new key's array is ours (copied at dispatch): the table may keep it
            p.watermarks.raise(mark == null ? item.key : null, mark, raise);
        }
        p.finished(item, item.key, raise);
    }

    /**
     * The same step, but the store decides: a missing key or token, or an unreadable one, is refused whatever
     * the key's stored watermark; otherwise the record's transaction compares its token with the stored one.
     */
    private void processInTransaction(ParallelPartition p, ParallelPartition.Item item) {
        ConsumerRecord<ByteBuffer, ByteBuffer> record = item.record;
        Header header = RecordStep.tokenHeader(record);
        long token = FenceDecision.decide(item.key != null, header, 0, step.policy());
        if (!FenceDecision.accepted(token)) {
            step.refuse(record, token, header, 0, p);
            p.finished(item, null, 0);
            return;
        }
        RecordStep.Typed<K, V> typed = step.deserialize(record);
        long outcome =
                transactions.applyOnce(groupId, p.partition, item.key, record.offset(), token, step.policy(), tx -> {
                    if (typed.record() == null) {
                        // inside the transaction: acknowledged before the key's applied offset passes this record
                        step.deadLetter(record, DeadLetterReason.UNREADABLE_RECORD, typed.failure());
                    } else {
                        step.handle(tx, typed.record(), token);
                    }
                });
        if (outcome == RecordTransactions.APPLIED) {
            if (typed.record() == null) {
                p.deadLettered(DeadLetterReason.UNREADABLE_RECORD);
            } else {
                p.accepted();
            }
        } else if (outcome == RecordTransactions.APPLIED_BEFORE) {
            LOG.debug(
                    "group {}: {}-{}@{} was applied before (its key's applied offset is at or past it); skipped",
                    groupId,
                    record.topic(),
                    record.partition(),
                    record.offset());
        } else {
            step.refuse(record, FenceDecision.STALE, header, outcome, p);
        }
        p.finished(item, null, 0);
    }
}
