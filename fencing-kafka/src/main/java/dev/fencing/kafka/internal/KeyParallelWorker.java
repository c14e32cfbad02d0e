package dev.fencing.kafka.internal;

import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.RecordHandlingException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the {@link RecordStep} for one record on a key-parallel worker thread, and reports the record finished to
 * its partition. A refusal's dead letter is acknowledged before the record counts as finished (the step's sink
 * awaits each one). With a plain handler the step decides against the partition's watermarks table, read and
 * raised under the partition's monitor, and the key's watermark is raised only after the handler returned; with
 * a transactional one the store decides in the record's own transaction ({@link RecordTransactions}), or in its
 * commit group's ({@link #processGroup}).
 * Thread-safe: records of one key never run at the same time.
 */
public final class KeyParallelWorker<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(KeyParallelWorker.class);

    private final String groupId;
    private final RecordStep<K, V> step;
    private final RecordTransactions<Object> transactions; // null: plain handler
    private final RetryPolicy retry;
    private final AtomicInteger retrying; // workers waiting to run a record again, with the poll thread
    private final AtomicLong retries;

    public KeyParallelWorker(
            ConsumerSettings settings,
            RecordStep<K, V> step,
            RecordTransactions<Object> transactions,
            AtomicInteger retrying,
            AtomicLong retries) {
        this.groupId = settings.groupId();
        this.step = step;
        this.transactions = transactions;
        this.retry = settings.retry();
        this.retrying = retrying;
        this.retries = retries;
    }

    /**
     * Thrown by {@link #process} when the record's partition was cancelled while the record waited to run
     * again: the record stays unfinished, and this is not a failure of the consumer.
     */
    static final class RetryCancelled extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RetryCancelled() {
            super("cancelled while waiting to retry", null, false, false);
        }
    }

    /**
     * Decides and handles one record, then reports it finished to its partition; a transient failure (or a
     * retried handler failure) is waited out with the retry policy's back-off and the record run again: its
     * transaction was rolled back, and with a plain handler nothing was raised, so it is decided again as the
     * first time. The record keeps its lane (its key's next records wait) and stays running meanwhile.
     *
     * @throws RecordHandlingException if the handler failed (the record stays unfinished)
     * @throws dev.fencing.kafka.DeadLetterException if a refusal could not be dead-lettered
     * @throws dev.fencing.kafka.WatermarkStoreException if the store failed
     * @throws RetryCancelled if the partition was cancelled while the record waited to run again
     */
    void process(ParallelPartition p, ParallelPartition.Item item) {
        process(p, item, Set::of);
    }

    /**
     * {@link #process}; {@code beforeRetry} runs once, before the record first waits to run again, and returns the
     * partitions of the records it gave back to lanes the caller keeps meanwhile. Each wait marks the record's
     * partition and those as stalled until the back-off ends ({@link ParallelPartition#stallStarted}): a
     * revocation of one of them does not wait for the records in flight if the back-off ends after its drain
     * timeout, as they can finish only after it.
     */
    private void process(
            ParallelPartition p, ParallelPartition.Item item, Supplier<Set<ParallelPartition>> beforeRetry) {
        RetryPolicy.Attempts attempts = null;
        Set<ParallelPartition> stalled = null;
        try {
            while (true) {
                try {
                    processOnce(p, item);
                    return;
                } catch (RuntimeException e) {
                    if (attempts == null) {
                        attempts = retry.attempts();
                    }
                    long wait = attempts.next(e);
                    if (wait < 0) {
                        throw e;
                    }
                    if (attempts.failures() == 1) {
                        retrying.incrementAndGet();
                        stalled = new HashSet<>(beforeRetry.get());
                        stalled.add(p);
                    }
                    retries.incrementAndGet();
                    LOG.warn(
                            "group {}: {}-{}@{} rolled back by {} (attempt {}); run again in {} ms",
                            groupId,
                            item.record.topic(),
                            item.record.partition(),
                            item.record.offset(),
                            e.toString(),
                            attempts.failures(),
                            wait / 1_000_000);
                    long until = System.nanoTime() + wait;
                    stalled.forEach(stall -> stall.stallStarted(until));
                    boolean cancelled;
                    try {
                        cancelled = p.awaitCancelled(wait);
                    } finally {
                        stalled.forEach(ParallelPartition::stallEnded);
                    }
                    if (cancelled) {
                        throw new RetryCancelled();
                    }
                }
            }
        } finally {
            if (attempts != null && attempts.failures() > 0) {
                retrying.decrementAndGet();
            }
        }
    }

    /** One attempt of {@link #process}. */
    private void processOnce(ParallelPartition p, ParallelPartition.Item item) {
        if (transactions != null) {
            processInTransaction(p, item);
            return;
        }
        long watermark = 0;
        if (item.key != null) {
            synchronized (p) {
                watermark = p.watermarks.current(p.watermarks.find(item.key));
            }
        }
        long raise = step.apply(null, item.record, item.carried(), watermark, p);
        if (raise == RecordStep.REFUSED) {
            p.finished(item, null, 0);
            return;
        }
        synchronized (p) {
            // looked up again: other workers may have added keys since; a new key's array is ours (copied at
            // dispatch), the table may keep it
            p.watermarks.raise(item.key, raise);
        }
        p.finished(item, item.key, raise);
    }

    /**
     * The same step, but the store decides: a missing key or token, or an unreadable one, is refused whatever
     * the key's stored watermark; otherwise the record's transaction compares its token with the stored one.
     */
    private void processInTransaction(ParallelPartition p, ParallelPartition.Item item) {
        ConsumerRecord<ByteBuffer, ByteBuffer> record = item.record;
        Header header = item.tokenHeader();
        long token = FenceDecision.decide(item.key != null, header, 0, step.policy());
        if (!FenceDecision.accepted(token)) {
            step.refuse(record, token, header, 0, p);
            p.finished(item, null, 0);
            return;
        }
        // Deserialized in each run of the transaction: a transaction handler may run it again (Jdbi's
        // SerializableTransactionRunner, after a serialization failure), and the handler must get the record as
        // fetched, as in a retry of our own, not as the rolled-back run left it (its headers, a mutable value).
        AtomicReference<RecordStep.Typed<K, V>> typed = new AtomicReference<>();
        long outcome =
                transactions.applyOnce(groupId, p.partition, item.key, record.offset(), token, step.policy(), tx -> {
                    RecordStep.Typed<K, V> run = step.deserialize(record);
                    typed.set(run);
                    if (run.record() == null) {
                        // inside the transaction: acknowledged before the key's applied offset passes this record
                        step.deadLetter(record, DeadLetterReason.UNREADABLE_RECORD, run.failure());
                    } else {
                        step.handle(tx, run.record(), token);
                    }
                });
        settle(p, item, typed.get(), header, outcome); // deserialized whenever the outcome is APPLIED
    }

    /** Counts, logs or refuses a record after its transaction (or group) ended as {@code outcome}; finishes it. */
    private void settle(
            ParallelPartition p,
            ParallelPartition.Item item,
            RecordStep.Typed<K, V> typed,
            Header header,
            long outcome) {
        ConsumerRecord<ByteBuffer, ByteBuffer> record = item.record;
        if (outcome == RecordTransactions.APPLIED) {
            if (typed.record() == null) {
                p.deadLettered(DeadLetterReason.UNREADABLE_RECORD);
            } else {
                p.accepted();
            }
        } else if (outcome == RecordTransactions.APPLIED_BEFORE) {
            step.appliedBefore(record);
        } else {
            step.refuse(record, FenceDecision.STALE, header, outcome, p);
        }
        p.finished(item, null, 0);
    }

    /**
     * A commit group (transactional handler only): the records a worker took from one or more lanes, records of one key
     * in offset order. Refuses those without a key or a readable token first, one after the other (a record whose
     * partition was cancelled while an earlier refusal's dead letter was awaited is given up, as below); runs the
     * others in one store transaction ({@link RecordTransactions#applyGroup}) and only after it committed reports them
     * finished (a refusal's dead letter is sent and acknowledged inside the group, before a later record of its key
     * moves the key's applied offset past it); puts back at the front of their lanes those whose turn came after {@code
     * deadline}. Each record waits for its turn held ({@link ParallelPartition#hold}), as in a rerun below; one whose
     * partition was cancelled by then does not start, and the group ends there as at its deadline (the records after it
     * go back to their lanes, or are given up with their partition). A group the store rolled back (a conflict, a
     * transient failure, or a handler that threw) is rerun record by record, each in its own transaction, as {@link
     * #process} runs them (retrying each as it does; before a record of the rerun first waits to run again, the records
     * after it go back to their lanes, so that they do not count as running meanwhile, and their partitions count as
     * stalled while it waits). A record of the rerun waits for its turn held ({@link ParallelPartition#hold}), in
     * flight but not running, so that a revocation of its partition, once it lets no more of the partition's records
     * start, does not wait for the records before it, which may be other partitions' (its wait for the records in
     * flight, before, counts it, up to the drain timeout); one whose partition was cancelled meanwhile (revoked, lost,
     * closing) is not started. Every record of the group is finished, put back or abandoned (or, held, given up) when
     * this returns or throws: abandoned or given up only when its partition was cancelled; a record of a partition
     * still running that the group did not reach (it stopped at a failure, at a record whose partition was cancelled,
     * or at a retry whose own partition was cancelled) goes back to its lane's front.
     *
     * @throws RecordHandlingException if a handler failed when its record ran alone
     * @throws dev.fencing.kafka.DeadLetterException if a refusal could not be dead-lettered
     * @throws dev.fencing.kafka.WatermarkStoreException if the store failed
     */
    void processGroup(List<ParallelPartition.Taken> group, long deadline) {
        boolean[] settled = new boolean[group.size()];
        boolean[] held = new boolean[group.size()];
        try {
            // Each record waits for its turn held, not running, in the refusals below, in the group's transaction and
            // in its rerun: the records before it may be other partitions', and a revocation of its partition must not
            // wait for them.
            for (int i = 0; i < group.size(); i++) {
                group.get(i).lane().owner.hold(group.get(i).item());
                held[i] = true;
            }
            List<RecordTransactions.GroupRecord> records = new ArrayList<>(group.size());
            List<Integer> positions = new ArrayList<>(group.size());
            List<RecordStep.Typed<K, V>> typed = new ArrayList<>(group.size());
            for (int i = 0; i < group.size(); i++) {
                ParallelPartition p = group.get(i).lane().owner;
                ParallelPartition.Item item = group.get(i).item();
                Header header = item.tokenHeader();
                long token = FenceDecision.decide(item.key != null, header, 0, step.policy());
                if (!FenceDecision.accepted(token)) {
                    held[i] = false;
                    if (!p.unhold(item)) {
                        settled[i] = true; // cancelled while an earlier refusal's dead letter was awaited: given up
                        continue;
                    }
                    step.refuse(item.record, token, header, 0, p);
                    p.finished(item, null, 0);
                    settled[i] = true;
                    continue;
                }
                positions.add(i);
                records.add(new RecordTransactions.GroupRecord(p.partition, item.key, item.record.offset(), token));
                typed.add(step.deserialize(item.record));
            }
            long[] outcomes = records.size() < 2
                    ? null // one record: its own transaction is cheaper than a group's
                    : transactions.applyGroup(
                            groupId, records, step.policy(), deadline, new RecordTransactions.GroupWork<Object>() {
                                @Override
                                public boolean start(int j) {
                                    int i = positions.get(j);
                                    ParallelPartition.Taken taken = group.get(i);
                                    held[i] = false;
                                    if (!taken.lane().owner.unhold(taken.item())) {
                                        // cancelled while an earlier record ran: given up unfinished; the group ends
                                        settled[i] = true;
                                        return false;
                                    }
                                    return true;
                                }

                                @Override
                                public void run(Object tx, int j) {
                                    ParallelPartition.Item item =
                                            group.get(positions.get(j)).item();
                                    RecordStep.Typed<K, V> t = typed.get(j);
                                    if (t.record() == null) {
                                        // inside the group: acknowledged before the key's applied offset passes
                                        step.deadLetter(item.record, DeadLetterReason.UNREADABLE_RECORD, t.failure());
                                    } else {
                                        step.handle(
                                                tx, t.record(), records.get(j).token());
                                    }
                                }

                                @Override
                                public void refused(int j, long stored) {
                                    // inside the group too: a later record of the key may be applied in it
                                    ParallelPartition.Taken taken = group.get(positions.get(j));
                                    ConsumerRecord<ByteBuffer, ByteBuffer> record = taken.item().record;
                                    step.refuse(
                                            record,
                                            FenceDecision.STALE,
                                            taken.item().tokenHeader(),
                                            stored,
                                            taken.lane().owner);
                                }
                            });
            if (outcomes == null) {
                // Held again: the records a rolled-back group reached (a record it gave up at its turn is not run)
                for (int i : positions) {
                    if (!settled[i] && !held[i]) {
                        group.get(i).lane().owner.hold(group.get(i).item());
                        held[i] = true;
                    }
                }
                for (int k = 0; k < positions.size(); k++) {
                    int i = positions.get(k);
                    if (settled[i]) {
                        continue; // given back while an earlier record waited to run again
                    }
                    held[i] = false;
                    if (!group.get(i).lane().owner.unhold(group.get(i).item())) {
                        // cancelled while an earlier record ran: given up unfinished, it does not start
                        settled[i] = true;
                        continue;
                    }
                    int later = k + 1;
                    process(
                            group.get(i).lane().owner,
                            group.get(i).item(),
                            () -> giveBack(group, positions.subList(later, positions.size()), settled, held));
                    settled[i] = true;
                }
                return;
            }
            // not reached, still held: back at the front of their lanes, or given up if their partition was cancelled
            List<Integer> notRun = new ArrayList<>();
            for (int j = 0; j < outcomes.length; j++) {
                if (outcomes[j] == RecordTransactions.NOT_RUN) {
                    notRun.add(positions.get(j));
                }
            }
            giveBack(group, notRun, settled, held);
            for (int j = 0; j < outcomes.length; j++) {
                int i = positions.get(j);
                if (settled[i]) {
                    continue;
                }
                ParallelPartition p = group.get(i).lane().owner;
                ParallelPartition.Item item = group.get(i).item();
                if (outcomes[j] > 0) {
                    p.finished(item, null, 0); // refused, and dead-lettered, inside the group
                } else {
                    settle(p, item, typed.get(j), item.tokenHeader(), outcomes[j]);
                }
                settled[i] = true;
            }
        } finally {
            giveBack(group, IntStream.range(0, settled.length).boxed().toList(), settled, held);
        }
    }

    /**
     * The group's records at {@code positions} it has not settled, the latest first: abandoned (or, if {@code
     * held}, given up) if their partition was cancelled, else back at the front of their lanes, queued (the group
     * keeps the lanes until it ends).
     * Also before a record of a group rerun record by record waits to run again: the records after it, of its
     * partition or of others, must not count as running while it waits (up to the retry time), or a revocation
     * of their partition would wait for them in vain and stop the consumer. Returns the partitions of the records
     * put back in their lanes.
     */
    private static Set<ParallelPartition> giveBack(
            List<ParallelPartition.Taken> group, List<Integer> positions, boolean[] settled, boolean[] held) {
        Set<ParallelPartition> putBack = new HashSet<>();
        // A record that did not finish stops its partition's frontier. When the group stopped early (a
        // failure, or a retry whose partition was cancelled while it waited), the records after it in the
        // group belong to it or to other partitions; those of a partition still running go back to the
        // front of their lanes, the latest first, so that their key's next record cannot run before them.
        for (int j = positions.size() - 1; j >= 0; j--) {
            int i = positions.get(j);
            if (!settled[i]) {
                ParallelPartition.Taken taken = group.get(i);
                if (held[i]) {
                    held[i] = false;
                    if (!taken.lane().owner.unhold(taken.item())) {
                        settled[i] = true; // given up: its partition was cancelled
                        continue;
                    }
                }
                if (taken.lane().owner.cancelled()) {
                    taken.lane().owner.abandoned(taken.item());
                } else {
                    taken.lane().owner.putBack(taken.lane(), taken.item());
                    putBack.add(taken.lane().owner);
                }
                settled[i] = true;
            }
        }
        return putBack;
    }
}
