package dev.fencing.kafka.internal;

import dev.fencing.kafka.FencedKafkaException;
import dev.fencing.kafka.HandlersStillRunningException;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key-parallel mode of the fenced consumer, on the poll thread's side: hands each polled record to its
 * key's lane ({@link ParallelPartition}), runs lanes on a fixed pool of {@code maxConcurrency} workers
 * ({@link KeyParallelWorker} handles the records), pauses partitions that hold too many records, commits
 * each partition's offset up to its lowest unfinished record, and on revocation waits for the partition's
 * records before it commits and lets the partition go. Every method is for the poll thread.
 *
 * <p><b>Commit groups</b> (transactional handler, {@code groupMaxRecords} above 1). A worker takes up to {@code
 * groupMaxRecords} records from the lanes waiting, whole lanes' worth in order, and runs them as one group: one
 * transaction that locks each of their keys once, decides and runs the records one after the other (for at most
 * {@code groupMaxTime}; records left over go back to the front of their lanes), writes the keys' tokens and
 * applied offsets in one statement and commits. Only then are its records finished and its lanes let go. Each
 * record waits for its turn held ({@link ParallelPartition#hold}), in flight but not running, and starts only if its
 * partition is not cancelled by then; else the group ends there, as at its time limit.
 * A group the store rolls back (a deadlock, a serialization failure, a lost connection, a key another member
 * created meanwhile, or a handler that threw) is rerun record by record, each in a transaction of its own; a
 * record's own transaction below is a group of one.
 *
 * <p><b>Why a crash neither applies a record twice nor skips one</b> (transactional handler, {@code
 * PostgresWatermarkStore}). Three facts hold at every moment:
 *
 * <ol>
 *   <li>Per key, records run one at a time in offset order: a lane belongs to at most one group at a time,
 *       which runs the lane's records in order and keeps the lane until it committed. A record counts as
 *       finished only once its group committed (whatever the record's outcome in it), or its refusal's dead
 *       letter was acknowledged (before the group), or it was found applied before.
 *   <li>Each group locks its keys' rows (creating the missing ones, so that it holds those too; so does a
 *       record's own transaction, a group of one), decides each
 *       record against its key's stored token and applied offset as the group's earlier records of the key
 *       left them, runs the handler for each accepted one, dead-letters each one it refuses and awaits the
 *       acknowledgement, and stores each key's raised token with the offset of its last applied record as the
 *       key's applied offset: all of it or none of it commits. So a key's applied offset {@code a} means its
 *       record at {@code a} was applied, and every earlier record of the key had been dealt with durably
 *       before that commit: applied in a committed group (an earlier one, by (1), or this one), or refused
 *       with its dead letter acknowledged.
 *   <li>A partition's stored offset {@code n} is only ever the frontier: every record below {@code n} had
 *       finished, so by (1) its group had committed, when it was saved.
 * </ol>
 *
 * After a crash the consumer reads again from {@code n}. Records below {@code n} finished (3) and are not
 * read. A record at or above {@code n} whose offset is at or below its key's applied offset was dealt with (2)
 * and is skipped, inside the same locked transaction that would have applied it. Any other record was not
 * applied (its group never committed, else the key's applied offset would reach it), and no later record of
 * its key was applied either (that one's applied offset would reach past it): the key's stored token is what
 * it was when the record was first decided, so it is decided again exactly as before, and applied now if
 * accepted. In particular a group that had not committed when the process died left neither an effect nor an
 * applied offset for any of its records, none of which had finished: all of them are read again and decided
 * as the first time. Hence every record is applied once, or refused. A refusal may be dead-lettered twice (at
 * least once, as in the serial consumer; a group rerun record by record dead-letters its refusals again). Two
 * members holding one partition during a rebalance (a zombie) serialize on each key's row lock (groups lock
 * their keys in one order, so they queue rather than deadlock; a deadlock with anything else reruns the
 * group), and the later one finds the record applied: this holds without any partition lock. The replay
 * reaches back to the stored frontier: over the records held when the process died (at most {@code
 * fencing.max.in.flight.per.partition} plus one poll per partition) and those that passed the frontier since
 * its last save, which is saved every commit interval and as soon as it runs {@code
 * fencing.max.in.flight.per.partition} records ahead: at most about twice that window plus two polls per
 * partition.
 *
 * <p><b>Retries keep the three facts.</b> A record whose transaction a transient failure rolled back (the store's
 * connection lost, a deadlock, a serialization failure; {@code RetryPolicy}), and every record of a commit group so
 * rolled back (rerun one by one), is run again by the worker that holds it: it stays in flight in its lane, unfinished,
 * while it waits (1 and 3: the key's later records wait behind it and the frontier stays below it), and each attempt is
 * a new transaction that locks the key's row and decides against what is stored (2). A record of such a rerun waiting
 * for its turn (behind records that may be other partitions') is held, not running: once its partition is cancelled it
 * never starts, so a revocation's wait for the partition's running handlers does not wait for it (its wait for the
 * records in flight, before, does, up to the drain timeout, as for a queued record), and it stays unfinished (1 and 3
 * as for a record never taken). So an attempt whose COMMIT reached the server but whose answer was lost with the
 * connection is found applied by the next attempt ({@code APPLIED_BEFORE}), not applied twice; a record whose wait is
 * cancelled (revocation, loss, close, or a failure elsewhere) stays unfinished, as a crash would leave it.
 *
 * <p><b>So does a group's first run that meets a cancelled partition.</b> Its records too wait for their turn held (the
 * refusals of records without a key or a readable token, before its transaction, included), and a record's turn starts
 * it only if its partition is not cancelled, atomically with the cancellation ({@link ParallelPartition#unhold}), so a
 * revocation's wait for the partition's running handlers does not wait for a record of the partition not yet reached
 * (it waits, as for any running record, for one the group ran before the cancellation: that one finishes only with the
 * group's commit, 1). A record given up at its turn in the transaction ends the group there, as its time limit does:
 * it and the records after it are neither decided nor run, the group commits what its earlier records did, and the
 * records after it go back to the front of their lanes (given up if their partition was cancelled). A refusal given up
 * before the transaction is only skipped: the group goes on with the others, and its key's later records in the group
 * are of its partition, so each is given up at its turn too. The given-up record stays unfinished,
 * the frontier below it (1 and 3, as for a record never taken); the group commits no applied offset for its key past
 * it, as no later record of its key ran in the group (they are of its partition, cancelled for good) or outside it (the
 * group kept the lane) (2); and the group's lock on its key's row, held until the commit, makes a next owner wait and
 * then find the record not applied. A failure on the poll thread (the store's progress commit, a watermark load) drops
 * every partition without committing and takes it again from the store, exactly as a lost partition that comes back:
 * nothing of what the store lacks is assumed done.
 *
 * <p>With a plain handler the fence decision uses the partition's watermarks table in memory (loaded lazily
 * from the store by {@link MissingWatermarks}); a record's raised watermark is handed to the store only with
 * the offset that passes it, so the store always holds the watermarks of exactly the records below its
 * offset: a crash replays the records above it, at least once, each decided as it was the first time.
 */
public final class KeyParallelRunner<K, V> implements Scheduler {
    private static final Logger LOG = LoggerFactory.getLogger(KeyParallelRunner.class);
    /** Records a worker takes from one lane before it lets other lanes have the thread. */
    private static final int LANE_TURN = 32;
    /** Poll timeout while records are in flight: their partitions' progress is looked at after each poll. */
    private static final Duration BUSY_POLL = Duration.ofMillis(5);
    /** The runner whose pool a thread belongs to, for {@link #isWorkerThread()}. */
    private static final ThreadLocal<KeyParallelRunner<?, ?>> WORKER_OF = new ThreadLocal<>();

    private final String groupId;
    private final WatermarkStore<Object> store; // null: heap only
    private final boolean transactional;
    private final int maxInFlight;
    private final int watermarkCacheMaxKeys;
    private final Duration commitInterval;
    private final Duration drainTimeout;
    /**
     * How long a revocation waits for handlers still running after the drain timeout: a plain handler's
     * effect is fenced only by the resource, so, like the serial consumer, the member keeps the partition
     * until its handlers return or the group expels it ({@code max.poll.interval.ms}); a transactional one
     * meets the next owner on its key's row lock, so the drain timeout suffices.
     */
    private final Duration runningTimeout;
    /** Records one commit group takes at most; 0: no groups, a transaction per record (or a plain handler). */
    private final int groupMaxRecords;

    private final long groupMaxNanos;
    /** Lanes waiting for a commit group, each with a pool task queued for it (grouped mode only). */
    private final ArrayDeque<ParallelPartition.Lane> ready = new ArrayDeque<>();

    private final Consumer<ByteBuffer, ByteBuffer> consumer;
    private final PartitionOwnership ownership;
    private final OffsetCommitter committer;
    private final ConsumerMeters meters;
    private final KeyParallelWorker<K, V> worker;
    private final ExecutorService pool;
    private final Map<TopicPartition, ParallelPartition> partitions = new HashMap<>();
    private final KeyParallelProgress progress;
    private final Set<TopicPartition> paused = new HashSet<>();
    private final AtomicReference<FencedKafkaException> failure = new AtomicReference<>();
    private long lastCommit = System.nanoTime();
    private volatile int held; // records held by the partitions' frontiers, as of the last poll
    private volatile int watermarks; // keys held by the partitions' tables, as of the last poll

    public KeyParallelRunner(
            ConsumerSettings settings,
            WatermarkStore<Object> store,
            boolean transactional,
            KeyParallelWorker<K, V> worker,
            Consumer<ByteBuffer, ByteBuffer> consumer,
            PartitionOwnership ownership,
            OffsetCommitter committer,
            ConsumerMeters meters) {
        this.groupId = settings.groupId();
        this.store = store;
        this.transactional = transactional;
        this.maxInFlight = settings.maxInFlightPerPartition();
        this.watermarkCacheMaxKeys = settings.watermarkCacheMaxKeys();
        this.commitInterval = settings.commitInterval();
        this.drainTimeout = settings.closeTimeout();
        Duration maxPollInterval = Duration.ofMillis(Long.parseLong(
                String.valueOf(settings.kafka().getOrDefault(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 300_000))));
        this.runningTimeout =
                transactional || maxPollInterval.compareTo(drainTimeout) < 0 ? drainTimeout : maxPollInterval;
        this.groupMaxRecords = transactional && settings.groupMaxRecords() > 1 ? settings.groupMaxRecords() : 0;
        this.groupMaxNanos = settings.groupMaxTime().toNanos();
        this.consumer = consumer;
        this.ownership = ownership;
        this.committer = committer;
        this.meters = meters;
        this.worker = worker;
        this.progress = new KeyParallelProgress(groupId, store, ownership, committer, watermarkCacheMaxKeys);
        AtomicInteger threads = new AtomicInteger();
        int n = settings.maxConcurrency();
        this.pool = new ThreadPoolExecutor(n, n, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(
                    () -> {
                        WORKER_OF.set(this);
                        task.run();
                    },
                    settings.clientId() + "-worker-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }

    @Override
    public boolean isTerminated() {
        return pool.isTerminated();
    }

    /** Whether the calling thread is one of this runner's workers (a handler calling {@code close()}). */
    @Override
    public boolean isWorkerThread() {
        return WORKER_OF.get() == this;
    }

    /** How long the next poll may wait: short while records are in flight, so progress is committed soon. */
    @Override
    public Duration pollTimeout(Duration configured) {
        for (ParallelPartition p : partitions.values()) {
            if (p.held() > 0) {
                return BUSY_POLL.compareTo(configured) < 0 ? BUSY_POLL : configured;
            }
        }
        return configured;
    }

    /** After {@link PartitionOwnership#assign}: the partitions' lanes, empty. */
    @Override
    public void assigned(Collection<TopicPartition> assigned) {
        for (TopicPartition partition : assigned) {
            open(partition);
        }
    }

    private void open(TopicPartition partition) {
        PartitionWatermarks table = ownership.watermarks(partition);
        if (table == null) {
            return; // not taken (a failed assignment)
        }
        partitions.put(partition, new ParallelPartition(partition, transactional ? null : table));
        progress.forget(partition);
    }

    /** {@link #dispatch}, then {@link #afterPoll}. */
    @Override
    public void handle(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        dispatch(records);
        afterPoll();
    }

    /** Queues each polled record behind the earlier ones of its key and starts the lanes that were idle. */
    public void dispatch(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        List<ParallelPartition.Lane> idleLanes = new ArrayList<>();
        for (TopicPartition partition : records.partitions()) {
            ParallelPartition p = partitions.get(partition);
            if (p == null) {
                throw new IllegalStateException("records of " + partition + " arrived before its assignment");
            }
            List<ConsumerRecord<ByteBuffer, ByteBuffer>> polled = records.records(partition);
            if (p.watermarks != null && !p.watermarks.complete()) {
                ownership.held(MissingWatermarks.load(store, groupId, partition, p.watermarks, p, polled));
            }
            for (ConsumerRecord<ByteBuffer, ByteBuffer> record : polled) {
                ParallelPartition.Lane idle = p.add(record);
                if (idle == null) {
                    continue;
                }
                if (groupMaxRecords > 0) {
                    idleLanes.add(idle);
                } else {
                    pool.execute(() -> runLane(idle));
                }
            }
        }
        // grouped: queued once the whole poll is in its lanes, so that a group takes a lane's records together
        if (!idleLanes.isEmpty()) {
            synchronized (ready) {
                ready.addAll(idleLanes);
            }
            for (int i = 0; i < idleLanes.size(); i++) {
                pool.execute(this::runGroup);
            }
        }
    }

    /**
     * A worker's commit group: takes up to {@code groupMaxRecords} records from the lanes waiting (a lane's
     * records in order, several lanes), runs them in one transaction ({@link KeyParallelWorker#processGroup}),
     * and only then lets the lanes go: one with records left waits again at the back of the queue. Each lane
     * queued came with a pool task, so a task that finds none left (its lane went into another task's group)
     * just ends.
     */
    private void runGroup() {
        List<ParallelPartition.Taken> group = new ArrayList<>();
        synchronized (ready) {
            while (group.size() < groupMaxRecords) {
                ParallelPartition.Lane lane = ready.poll();
                if (lane == null) {
                    break;
                }
                if (failure.get() != null) {
                    lane.owner.cancel();
                }
                lane.owner.take(lane, groupMaxRecords - group.size(), group);
            }
        }
        if (group.isEmpty()) {
            return;
        }
        try {
            worker.processGroup(group, System.nanoTime() + groupMaxNanos);
        } catch (KeyParallelWorker.RetryCancelled e) {
            // its partition was cancelled while a record waited to run again: what did not finish stays so
        } catch (FencedKafkaException e) {
            fail(e);
            group.forEach(t -> t.lane().owner.cancel());
        } catch (Throwable e) { // not the handler's (the worker wraps those): a bug, which must stop the consumer
            ParallelPartition.Taken first = group.get(0);
            fail(new RecordHandlingException(
                    first.lane().owner.partition, first.item().record.offset(), -1, e));
            group.forEach(t -> t.lane().owner.cancel());
        } finally {
            Map<ParallelPartition.Lane, Boolean> lanes = new IdentityHashMap<>();
            for (ParallelPartition.Taken taken : group) {
                if (lanes.putIfAbsent(taken.lane(), Boolean.TRUE) == null
                        && taken.lane().owner.resume(taken.lane())) {
                    requeue(taken.lane());
                }
            }
        }
    }

    private void requeue(ParallelPartition.Lane lane) {
        synchronized (ready) {
            ready.addLast(lane);
        }
        try {
            pool.execute(this::runGroup);
        } catch (RejectedExecutionException e) {
            lane.owner.cancel(); // the consumer is closing and the workers are stopping: the lane's records wait
        }
    }

    /** A worker's turn on one lane: up to {@link #LANE_TURN} records, then the lane goes to the back of the queue. */
    private void runLane(ParallelPartition.Lane lane) {
        ParallelPartition p = lane.owner;
        for (int i = 0; i < LANE_TURN; i++) {
            if (failure.get() != null) {
                p.cancel();
            }
            ParallelPartition.Item item = p.next(lane);
            if (item == null) {
                return;
            }
            try {
                worker.process(p, item);
            } catch (KeyParallelWorker.RetryCancelled e) {
                p.abandoned(item); // its partition was cancelled while it waited to run again: not a failure
                return;
            } catch (FencedKafkaException e) {
                p.abandoned(item);
                fail(e);
                p.cancel();
                return;
            } catch (Throwable e) { // checked exceptions too: a sneaky-throwing handler must stop the consumer
                // not the handler's (the worker wraps those): the record's token is unknown here
                p.abandoned(item);
                fail(new RecordHandlingException(p.partition, item.record.offset(), -1, e));
                p.cancel();
                return;
            }
        }
        try {
            pool.execute(() -> runLane(lane));
        } catch (RejectedExecutionException e) {
            p.cancel(); // the consumer is closing and the workers are stopping: the lane's records wait unfinished
        }
    }

    private void fail(FencedKafkaException e) {
        if (failure.compareAndSet(null, e)) {
            LOG.debug("group {}: a worker failed, the consumer stops: {}", groupId, e.toString());
        }
    }

    /**
     * After each poll: stops on a worker's failure (after committing what finished), pauses partitions that
     * hold {@code maxInFlightPerPartition} records or more and resumes them at half, evicts a partition's
     * watermarks from the heap once it is idle, commits progress every commit interval, updates the meters.
     *
     * @throws FencedKafkaException the failure of a worker, once nothing runs any more
     */
    public void afterPoll() {
        FencedKafkaException failed = failure.get();
        if (failed != null) {
            stopAll();
            throw failed;
        }
        Set<TopicPartition> pause = new HashSet<>();
        Set<TopicPartition> resume = new HashSet<>();
        boolean evict = false;
        boolean farAhead = false;
        for (ParallelPartition p : partitions.values()) {
            // held, not only in flight: records finished above a slow one are kept too (for the frontier), and
            // they are what a crash replays
            long next = progress.advance(p);
            long stored = ownership.storedOffset(p.partition);
            // what a crash would read again: keep it near the window, not a commit interval's worth of records
            // (nothing stored yet: the first progress is saved at once, wherever the partition starts)
            farAhead |= next >= 0 && (stored < 0 ? next > 0 : next - stored >= maxInFlight);
            int held = p.held();
            boolean tooManyKeys = p.watermarks != null && watermarkCount(p) > watermarkCacheMaxKeys;
            evict |= tooManyKeys && held == 0;
            if ((held >= maxInFlight || tooManyKeys) && paused.add(p.partition)) {
                pause.add(p.partition);
            } else if (!tooManyKeys && held <= maxInFlight / 2 && paused.remove(p.partition)) {
                resume.add(p.partition);
            }
        }
        if (!pause.isEmpty()) {
            consumer.pause(pause);
        }
        if (evict || farAhead || System.nanoTime() - lastCommit >= commitInterval.toNanos()) {
            commit(partitions.values());
        }
        if (!resume.isEmpty()) {
            consumer.resume(resume);
        }
        int total = 0;
        int keys = 0;
        for (ParallelPartition p : partitions.values()) {
            p.flushCounts(meters);
            total += p.held();
            keys += p.watermarks == null ? 0 : watermarkCount(p);
        }
        held = total;
        watermarks = keys;
    }

    /** A worker's failure is final: the worker retried it as long as the retry policy allows. */
    @Override
    public boolean isFinal(RuntimeException e) {
        return e == failure.get();
    }

    /** Keys the watermarks tables hold in the heap, over the owned partitions, as of the last poll. Any thread. */
    @Override
    public int watermarksHeld() {
        return watermarks;
    }

    /** Records polled and not yet committable, over the owned partitions, as of the last poll. Any thread. */
    @Override
    public int recordsHeld() {
        return held;
    }

    private static int watermarkCount(ParallelPartition p) {
        synchronized (p) {
            return p.watermarks.slots();
        }
    }

    /** Commits what finished, then evicts idle partitions' watermarks; resets a partition another member took. */
    private void commit(Collection<ParallelPartition> which) {
        lastCommit = System.nanoTime();
        TopicPartition stale = progress.save(which, partitions::get);
        if (stale != null) {
            reset(stale);
        } else {
            progress.evictIdle(which);
        }
    }

    /**
     * A partition another member committed: stop its records, then read it again from the store. None of its
     * queued records starts any more (the other member reads them from its own offset: with a plain handler they
     * would be handled twice); those running are waited for.
     */
    private void reset(TopicPartition partition) {
        ParallelPartition p = partitions.remove(partition);
        if (p == null) {
            return;
        }
        List<ParallelPartition> going = List.of(p);
        List<TopicPartition> stuck = drain(going, true, runningTimeout);
        if (!stuck.isEmpty()) {
            throw new HandlersStillRunningException(groupId, stuck, runningTimeout);
        }
        progress.forget(partition);
        ownership.reload(partition, p.advance((key, token) -> {}));
        open(partition);
        if (paused.remove(partition)) {
            consumer.resume(List.of(partition)); // still assigned: paused in Kafka until told otherwise
        }
    }

    /**
     * Revocation ({@code commit} true) or loss: waits up to the drain timeout for the partitions' records in
     * flight (a record of a commit group waiting for its turn included; no longer once a worker waits out
     * a retry back-off that ends after that timeout with records of the partition: they cannot finish before it
     * ends, and the rebalance waits for this), then lets no more of them start (one waiting for its turn in a
     * commit group is given up at once) and waits for those running, a record waiting to run again stopping its wait
     * at once, unfinished (on
     * revocation with a plain handler up to {@code max.poll.interval.ms}, else the drain timeout again); commits
     * what finished (revocation only) and drops the partitions' state, also when that commit throws. Returns having
     * started nothing of them that still runs.
     *
     * @throws HandlersStillRunningException if handlers of the partitions still run after that
     */
    @Override
    public void release(Collection<TopicPartition> released, boolean commit) {
        release(released, commit, commit ? runningTimeout : drainTimeout);
    }

    private void release(Collection<TopicPartition> released, boolean commit, Duration running) {
        List<ParallelPartition> going = new ArrayList<>();
        for (TopicPartition partition : released) {
            ParallelPartition p = partitions.get(partition);
            if (p != null) {
                going.add(p);
            }
        }
        List<TopicPartition> stuck = drain(going, !commit, running);
        try {
            if (commit && stuck.isEmpty()) {
                commit(going);
            }
        } finally {
            // the partitions go whether or not their commit did (a store down at the revocation): Kafka takes
            // them all the same, and a partition left here would be saved by this member's next commit, under
            // another member, and resumed while not assigned
            for (ParallelPartition p : going) {
                partitions.remove(p.partition);
                progress.forget(p.partition);
                paused.remove(p.partition);
                p.flushCounts(meters);
            }
        }
        if (!stuck.isEmpty()) {
            throw new HandlersStillRunningException(groupId, stuck, drainTimeout.plus(running));
        }
    }

    /**
     * Waits for the records in flight ({@code cancelAtOnce}: only for those running; those of a partition stalled
     * past the drain timeout not at all, {@link ParallelPartition#awaitIdle}), then cancels the rest; returns the
     * partitions whose handlers still run. Only the frontier is committed after it, so a record that did not finish is never passed.
     */
    private List<TopicPartition> drain(List<ParallelPartition> going, boolean cancelAtOnce, Duration running) {
        try {
            if (!cancelAtOnce) {
                long deadline = System.nanoTime() + drainTimeout.toNanos();
                for (ParallelPartition p : going) {
                    if (!p.cancelled()) { // a cancelled partition's queued records never run
                        p.awaitIdle(false, deadline);
                    }
                }
            }
            long deadline = System.nanoTime() + running.toNanos();
            List<TopicPartition> stuck = new ArrayList<>();
            for (ParallelPartition p : going) {
                p.cancel();
                if (!p.awaitIdle(true, deadline)) {
                    stuck.add(p.partition);
                }
            }
            return stuck;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            List<TopicPartition> all = new ArrayList<>();
            going.forEach(p -> all.add(p.partition));
            return all;
        }
    }

    /** After a worker failed: no record starts any more; waits for those running, commits what finished. */
    private void stopAll() {
        List<ParallelPartition> all = new ArrayList<>(partitions.values());
        List<TopicPartition> stuck = drain(all, true, drainTimeout);
        if (stuck.isEmpty()) {
            commit(all);
        }
        for (ParallelPartition p : all) {
            p.flushCounts(meters);
        }
    }

    /**
     * On close: lets the records in flight finish (up to the drain timeout), commits, and stops the workers.
     * Never throws.
     */
    @Override
    public void close() {
        try {
            // after a failure nothing runs any more and what finished is committed: only the state goes
            release(new ArrayList<>(partitions.keySet()), failure.get() == null, drainTimeout);
        } catch (RuntimeException e) {
            LOG.warn("group {}: closing the key-parallel workers: {}", groupId, e.toString());
        } finally {
            pool.shutdown();
            try {
                if (!pool.awaitTermination(drainTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    pool.shutdownNow();
                }
            } catch (InterruptedException e) {
                pool.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }
}
