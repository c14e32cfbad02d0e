package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.LeaseHold;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One thread's hold of one lock, from the start of its acquire to its release, shared by its re-entrant leases.
 * It is registered before its etcd lease is granted, so that every event that invalidates holds (a pause, a
 * close of the locks) finds it; a hold marked before its grant yields a lease that is invalid from the start.
 */
final class EtcdHold implements LeaseHold {
    final EtcdLockRegistry registry;
    final String name;
    final String path;
    final Thread owner;
    final AtomicInteger entries = new AtomicInteger(1);

    private final AtomicReference<LeaseLoss> loss = new AtomicReference<>();
    /**
     * Set once the acquire hands the hold out, and never cleared: a loss marked before the release, and found by its
     * marker only after it, is still told.
     */
    private volatile boolean granted;
    /** Set by whichever thread tells the listener of the loss, so that only one does. */
    private final AtomicBoolean lossClaimed = new AtomicBoolean();
    /**
     * Until when the etcd lease is certainly alive on the server: the send time of the last answered keep-alive (or
     * of the grant) plus its TTL, less the safety margin, by both clocks (see {@link #deadlinePassed()}). Raised
     * only, by the monotonic deadline, and both clocks' deadlines always come from the same request: one object,
     * because a wall-clock deadline raised on its own kept a value from before a step back of the clock, which
     * then hid a suspend for as long as the step.
     */
    private final AtomicReference<Deadline> deadline = new AtomicReference<>(new Deadline(0, 0));

    /** A deadline by {@code System.nanoTime} and the same by {@code System.currentTimeMillis}. */
    private record Deadline(long nanos, long wallMillis) {}
    /** Whether a keep-alive is in flight, and since when: a server that does not answer must not pile them up. */
    final AtomicBoolean keepAliveInFlight = new AtomicBoolean();

    volatile long sentAtNanos;
    /** Counted down by whatever should wake a waiting acquire: a predecessor's deletion, a loss, a close. */
    volatile CountDownLatch wakeUp = new CountDownLatch(1);

    volatile long leaseId;
    volatile String key;
    volatile ByteSequence keyBytes;
    volatile long token;
    volatile ScheduledFuture<?> keepAlive;

    /** What the key holds: who holds it (a lock), or the participant id (an election). */
    final ByteSequence value;
    /** Run once, right after the mark, by whichever thread invalidates the hold: ends an election term. */
    private final Runnable onLoss;

    EtcdHold(EtcdLockRegistry registry, String name, String path, Thread owner, ByteSequence value, Runnable onLoss) {
        this.registry = registry;
        this.name = name;
        this.path = path;
        this.owner = owner;
        this.value = value;
        this.onLoss = onLoss;
    }

    void leased(long leaseId, String key) {
        this.leaseId = leaseId;
        this.key = key;
        this.keyBytes = ByteSequence.from(key, StandardCharsets.UTF_8);
    }

    /** Marks the hold invalid and wakes a waiting acquire; true only for the call that did so. */
    boolean invalidate(LeaseLoss cause) {
        if (!loss.compareAndSet(null, cause)) {
            return false;
        }
        wakeUp.countDown();
        if (onLoss != null) {
            onLoss.run();
        }
        return true;
    }

    void grant() {
        granted = true;
    }

    /** Whether an acquire handed the hold out: a contender's hold has no lease a listener could know of. */
    boolean granted() {
        return granted;
    }

    /** True only for the first call: its caller tells the listener of the loss. */
    boolean claimLoss() {
        return lossClaimed.compareAndSet(false, true);
    }

    @Override
    public LeaseLoss loss() {
        return loss.get();
    }

    @Override
    public long token() {
        return token;
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public Thread owner() {
        return owner;
    }

    @Override
    public boolean isValid() {
        return registry.isValid(this);
    }

    @Override
    public boolean verify() {
        return registry.verify(this);
    }

    /** @throws IllegalStateException on another thread than the owner (a lease's close checks it first) */
    @Override
    public void exit() {
        LeaseHold.requireOwner(this);
        registry.exit(this);
    }

    long validUntilNanos() {
        return deadline.get().nanos();
    }

    /** The wall-clock deadline that goes with {@link #validUntilNanos()}. */
    long validUntilWallMillis() {
        return deadline.get().wallMillis();
    }

    /**
     * Raises the deadline to a TTL (less the margin) after a request sent at {@code sentNanos} / {@code
     * sentWallMillis} was answered, unless it is already later (a late answer to an older keep-alive).
     */
    void aliveUntil(long sentNanos, long sentWallMillis, long ttlSeconds) {
        long ttlNanos = TimeUnit.SECONDS.toNanos(ttlSeconds);
        long nanos = sentNanos + ttlNanos - ttlNanos / EtcdLockRegistry.MARGIN_DIVISOR;
        long ttlMillis = TimeUnit.SECONDS.toMillis(ttlSeconds);
        long wall = sentWallMillis + ttlMillis - ttlMillis / EtcdLockRegistry.MARGIN_DIVISOR;
        deadline.accumulateAndGet(
                new Deadline(nanos, wall),
                (current, proposed) -> proposed.nanos() - current.nanos() > 0 ? proposed : current);
    }

    void firstDeadline(long sentNanos, long sentWallMillis, long ttlSeconds) {
        deadline.set(new Deadline(sentNanos, sentWallMillis));
        aliveUntil(sentNanos, sentWallMillis, ttlSeconds);
    }

    /**
     * Whether the deadline has passed by either clock, each read after the deadlines. The monotonic clock is the
     * one to trust; the wall clock also counts the time a suspended machine slept, which {@code System.nanoTime}
     * (CLOCK_MONOTONIC on Linux) leaves out, while etcd's leader kept counting. A wall clock stepped forward ends
     * a lease early (safe); one stepped back is covered by the monotonic clock.
     */
    boolean deadlinePassed() {
        Deadline until = deadline.get();
        return System.nanoTime() - until.nanos() > 0 || System.currentTimeMillis() - until.wallMillis() > 0;
    }

    /** Test hook: moves the wall-clock deadline, as a machine that slept through it would find it. */
    void wallDeadlineForTest(long wallMillis) {
        deadline.updateAndGet(until -> new Deadline(until.nanos(), wallMillis));
    }
}
