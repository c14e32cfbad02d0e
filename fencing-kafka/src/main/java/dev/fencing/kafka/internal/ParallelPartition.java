package dev.fencing.kafka.internal;

import dev.fencing.kafka.DeadLetterReason;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.utils.Bytes;

/**
 * One owned partition of the key-parallel consumer: a lane per key with records in flight (the key's records
 * in offset order, handled one at a time), the {@link OffsetFrontier}, and the partition's watermarks table
 * (plain handlers only). Every method is synchronized on this object, which also guards the table; the poll
 * thread adds records and reads the frontier, workers take records from lanes and report them finished.
 *
 * <p>A lane exists only while its key has a record queued or running, so the lanes and the frontier hold at
 * most the partition's records in flight, whatever the number of distinct keys.
 */
final class ParallelPartition implements RecordStep.Tally {
    /** The lane of records without a key: refused anyway, they only need to finish in order among themselves. */
    private static final Bytes NO_KEY = Bytes.wrap(new byte[0]);

    final TopicPartition partition;
    final PartitionWatermarks watermarks; // null: the store decides each record (transactional mode)
    private final OffsetFrontier frontier = new OffsetFrontier();
    private final Map<Bytes, Lane> lanes = new HashMap<>();
    private int queued;
    private int running;
    /**
     * Records of a commit group (in its one transaction, or rerun record by record) that wait for their turn ({@link
     * #hold}): in flight, but not running, so that a revocation's wait for the running records does not wait for them
     * (they never start once the partition is cancelled); its wait for the records in flight, before it cancels the
     * partition, counts them.
     */
    private int waiting;

    private boolean cancelled; // revoked, lost, failed or closing: no record starts any more
    /**
     * Workers waiting out a retry back-off with records of this partition in their hands: the record that waits
     * to run again, or records of its commit group given back to lanes the group keeps until it ends.
     */
    private int stalled;

    private long stalledUntil; // while stalled: when the latest of those back-offs ends (a System.nanoTime())
    // counts for the meters since the poll thread last took them
    private long accepted;
    private long dropped;
    private final Map<DeadLetterReason, Integer> deadLettered = new EnumMap<>(DeadLetterReason.class);

    /**
     * One record on its way: the fetched record, its key bytes (a copy; null: none) and its frontier slot; and its
     * fence token as fetched, read at its first attempt and kept for the others (a retry, a commit group rerun
     * record by record): the handler gets the record's headers themselves and may change them, and a rolled-back
     * attempt must not change how the record is decided. The token is read and kept by the worker that holds the
     * record (a record passes between workers through this partition's monitor).
     */
    static final class Item {
        final ConsumerRecord<ByteBuffer, ByteBuffer> record;
        final byte[] key;
        final OffsetFrontier.Slot slot;
        private Header tokenHeader;
        private boolean tokenHeaderRead;
        private long carried; // 0: not read yet

        Item(ConsumerRecord<ByteBuffer, ByteBuffer> record, byte[] key, OffsetFrontier.Slot slot) {
            this.record = record;
            this.key = key;
            this.slot = slot;
        }

        /** The record's last token header as fetched, or null. */
        Header tokenHeader() {
            if (!tokenHeaderRead) {
                tokenHeader = RecordStep.tokenHeader(record);
                tokenHeaderRead = true;
            }
            return tokenHeader;
        }

        /** The token the record was fetched with, as {@link TokenHeaderReader} reads it (never 0). */
        long carried() {
            if (carried == 0) {
                carried = RecordStep.carried(record);
            }
            return carried;
        }
    }

    /** The records of one key waiting or running, in offset order. */
    static final class Lane {
        final ParallelPartition owner;
        final Bytes key;
        final ArrayDeque<Item> items = new ArrayDeque<>();

        Lane(ParallelPartition owner, Bytes key) {
            this.owner = owner;
            this.key = key;
        }
    }

    ParallelPartition(TopicPartition partition, PartitionWatermarks watermarks) {
        this.partition = partition;
        this.watermarks = watermarks;
    }

    /**
     * Queues a record behind the earlier ones of its key; returns its lane if the lane was idle and must be
     * handed to a worker, else null (a worker already runs it). Records must come in offset order.
     */
    synchronized Lane add(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        byte[] key = record.key() == null ? null : FetchedBytes.copy(record.key());
        Item item = new Item(record, key, frontier.add(record.offset()));
        Bytes laneKey = key == null ? NO_KEY : Bytes.wrap(key);
        Lane lane = lanes.get(laneKey);
        boolean idle = lane == null;
        if (idle) {
            lane = new Lane(this, laneKey);
            lanes.put(laneKey, lane);
        }
        lane.items.addLast(item);
        queued++;
        return idle ? lane : null;
    }

    /**
     * The lane's next record, now counted as running; null if the lane is empty or the partition cancelled,
     * and then the lane is gone (a later record of its key opens a new one). Cancelled records stay
     * unfinished: the frontier stops below them.
     */
    synchronized Item next(Lane lane) {
        if (cancelled || lane.items.isEmpty()) {
            queued -= lane.items.size();
            lane.items.clear();
            lanes.remove(lane.key);
            notifyAll();
            return null;
        }
        queued--;
        running++;
        return lane.items.pollFirst();
    }

    /** A record a commit group took from its lane. */
    record Taken(Lane lane, Item item) {}

    /**
     * For a commit group: the lane's next records, at most {@code max}, appended to {@code group} and counted as
     * running; the lane stays with the group (a later record of its key waits in it) until {@link #resume}.
     * Returns how many; 0 if the lane is empty or the partition cancelled, and then the lane is gone.
     */
    synchronized int take(Lane lane, int max, List<Taken> group) {
        if (cancelled || lane.items.isEmpty()) {
            next(lane);
            return 0;
        }
        int n = Math.min(max, lane.items.size());
        for (int i = 0; i < n; i++) {
            group.add(new Taken(lane, lane.items.pollFirst()));
        }
        queued -= n;
        running += n;
        return n;
    }

    /** A taken record the group did not run (its time ran out): first in its lane again, queued. */
    synchronized void putBack(Lane lane, Item item) {
        lane.items.addFirst(item);
        queued++;
        running--;
        notifyAll();
    }

    /**
     * After its group: whether the lane has records left to run (the caller queues it again); if not, or if the
     * partition was cancelled, the lane is gone.
     */
    synchronized boolean resume(Lane lane) {
        if (cancelled || lane.items.isEmpty()) {
            next(lane);
            return false;
        }
        return true;
    }

    /**
     * A running record of a commit group (in its one transaction, or rerun record by record) now waits for its turn,
     * behind records that may be another partition's: it counts as in flight, no longer as running, until {@link
     * #unhold}.
     */
    synchronized void hold(Item item) {
        running--;
        waiting++;
        notifyAll();
    }

    /**
     * The held record's turn (or the group gives it back): it counts as running again and returns true; false if
     * the partition was cancelled meanwhile, and then it is given up, unfinished (the frontier stays below it), and
     * must not start.
     */
    synchronized boolean unhold(Item item) {
        waiting--;
        if (cancelled) {
            notifyAll();
            return false;
        }
        running++;
        return true;
    }

    /** A running record finished: accepted (raising {@code key} to {@code token}), refused, or skipped. */
    synchronized void finished(Item item, byte[] raisedKey, long token) {
        OffsetFrontier.finish(item.slot, raisedKey, token);
        running--;
        notifyAll();
    }

    /** A running record did not finish (its handler failed): the frontier stays below it for good. */
    synchronized void abandoned(Item item) {
        running--;
        notifyAll();
    }

    @Override
    public synchronized void accepted() {
        accepted++;
    }

    @Override
    public synchronized void dropped() {
        dropped++;
    }

    @Override
    public synchronized void deadLettered(DeadLetterReason reason) {
        deadLettered.merge(reason, 1, Integer::sum);
    }

    /** Hands the counts since the last call to the meters. Poll thread. */
    synchronized void flushCounts(ConsumerMeters meters) {
        meters.accepted(partition.topic(), accepted);
        meters.dropped(partition.topic(), dropped);
        deadLettered.forEach((reason, n) -> meters.deadLettered(partition.topic(), reason.name(), n));
        accepted = 0;
        dropped = 0;
        deadLettered.clear();
    }

    /** Records queued, held or running. */
    synchronized int inFlight() {
        return queued + waiting + running;
    }

    /** Records held by the frontier: those in flight, and finished ones above an unfinished one. */
    synchronized int held() {
        return frontier.size();
    }

    /** See {@link OffsetFrontier#advance}. */
    synchronized long advance(ObjLongConsumer<byte[]> raised) {
        return frontier.advance(raised);
    }

    /**
     * From now on no record of this partition starts; queued ones are dropped unfinished, and {@linkplain #hold held}
     * ones are given up unfinished at their turn.
     */
    synchronized void cancel() {
        cancelled = true;
        notifyAll();
    }

    synchronized boolean cancelled() {
        return cancelled;
    }

    /**
     * A worker starts waiting out a retry back-off, until {@code until} (a {@link System#nanoTime()}), with records
     * of this partition in its hands; {@link #awaitIdle} waiting for the records in flight stops waiting if the
     * back-off ends after its deadline.
     */
    synchronized void stallStarted(long until) {
        if (stalled == 0 || until - stalledUntil > 0) {
            stalledUntil = until;
        }
        stalled++;
        notifyAll();
    }

    /** The wait of {@link #stallStarted} ended. */
    synchronized void stallEnded() {
        stalled--;
    }

    /** Waits {@code nanos}, or until the partition is cancelled; returns whether it was. */
    synchronized boolean awaitCancelled(long nanos) {
        long deadline = System.nanoTime() + nanos;
        try {
            while (!cancelled) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                wait(Math.max(1, left / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return cancelled;
    }

    /**
     * Waits until nothing is in flight ({@code runningOnly}: nothing running, records queued or {@linkplain #hold held}
     * not counted) or {@code deadline} (a {@link System#nanoTime()}) passes; returns whether it got there. Waiting for
     * the records in flight also ends (false) once a worker waits out a retry back-off with records of the partition
     * ({@link #stallStarted}) that ends after the deadline: they finish after the back-off at the earliest. A back-off
     * that ends before it is waited for, as any record in flight (it may fail again and wait longer: the deadline still
     * bounds the wait).
     */
    synchronized boolean awaitIdle(boolean runningOnly, long deadline) throws InterruptedException {
        while (runningOnly ? running > 0 : queued + waiting + running > 0) {
            if (!runningOnly && stalled > 0 && stalledUntil - deadline > 0) {
                return false;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            wait(Math.max(1, left / 1_000_000));
        }
        return true;
    }
}
