package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.PauseDetector;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shared state of the locks made on one jetcd client and key prefix: the live holds (each with its etcd lease
 * and its keep-alives; one watch of the prefix reports deletions of their keys), the threads' ownership for
 * re-entry, and what invalidates holds: a keep-alive deadline that passed, a lease the server no longer knows, a
 * deleted key (or one that no watch nor read confirmed for a TTL), a pause of this JVM, and {@link #close()}. As
 * in {@code fencing-zookeeper}, an event that concerns several holds marks all of them before a listener hears of
 * any, and events found by the client's own threads are told on a thread of the registry's, so a slow listener
 * holds up neither keep-alives nor the pause detector.
 */
public final class EtcdLockRegistry implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdLockRegistry.class);

    /**
     * The deadline of a lease is the send time of its last answered keep-alive plus the TTL the server
     * granted, less TTL / {@value}. The server renewed the lease after that send time, so by its own clock
     * the lease lives at least a TTL past it: the margin only has to cover the difference in rate between
     * this host's monotonic clock and the etcd leader's (NTP keeps it below 0.05 %; 2 % also covers a leader
     * whose clock is slewed hard), and the server's expiry checks only ever come late, never early.
     */
    static final long MARGIN_DIVISOR = 50;

    /** The least time an acquire waits for one answer from etcd before it fails. */
    static final Duration MIN_REQUEST_TIMEOUT = Duration.ofSeconds(10);
    /**
     * The most: a failover to another member takes seconds, and a long TTL must not let one request hold up an
     * acquire, a release or a verify for the TTL.
     */
    static final Duration MAX_REQUEST_TIMEOUT = Duration.ofSeconds(30);
    /** How many lock names' highest tokens are remembered, to tell of a token that went backwards. */
    private static final int TOKENS_REMEMBERED = 65_536;

    final Client client;
    final String prefix;
    final long ttlSeconds;
    final FencedLockListener listener;
    final Duration requestTimeout;

    private final Set<EtcdHold> holds = ConcurrentHashMap.newKeySet();
    private final ConcurrentMap<OwnerKey, EtcdHold> owned = new ConcurrentHashMap<>();
    /** The highest token granted here per lock name, for the most recently granted locks. */
    private final Map<String, Long> highestTokens = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > TOKENS_REMEMBERED;
        }
    };
    /** Open election participants, withdrawn when these locks close. */
    private final Set<EtcdElection> participants = ConcurrentHashMap.newKeySet();

    private final KeyMutex mutex;
    final KeepAlives keepAlives;
    /** The watch of the holds' keys, and their release. */
    final HoldKeys keys;

    private final PauseClock pauses;
    private final LossNotifier notifier;
    private volatile boolean closed;

    private volatile Runnable betweenValidityReads = () -> {};
    private volatile BiConsumer<String, String> predecessorWatched = (waiter, predecessor) -> {};
    private volatile Runnable beforeDetectorTick = () -> {};
    private volatile Consumer<CompletableFuture<LeaseGrantResponse>> grantSent = grant -> {};
    private volatile Consumer<EtcdHold> beforeGranted = hold -> {};

    /** Settings as {@code EtcdLocks}' builder checked them. */
    public record Settings(
            Client client, String prefix, Duration leaseTtl, Duration pauseTolerance, FencedLockListener listener) {}

    public EtcdLockRegistry(Settings settings) {
        this.client = settings.client();
        this.prefix = settings.prefix();
        this.ttlSeconds = settings.leaseTtl().getSeconds();
        this.listener = settings.listener();
        this.requestTimeout = requestTimeout(settings.leaseTtl());
        this.mutex = new KeyMutex(this);
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, "fenced-etcd-keepalive");
            thread.setDaemon(true);
            return thread;
        });
        this.keepAlives = new KeepAlives(this, scheduler);
        this.keys = new HoldKeys(this, keepAlives);
        this.notifier = new LossNotifier(listener, this::claimLoss);
        this.pauses = PauseClocks.start(settings.pauseTolerance(), this::paused, () -> beforeDetectorTick.run());
    }

    /**
     * How long one request to etcd is waited for, over its attempts: the TTL, but long enough for jetcd to fail
     * over from a member that died under a request to one that answers, and never long.
     */
    static Duration requestTimeout(Duration leaseTtl) {
        if (leaseTtl.compareTo(MIN_REQUEST_TIMEOUT) < 0) {
            return MIN_REQUEST_TIMEOUT;
        }
        return leaseTtl.compareTo(MAX_REQUEST_TIMEOUT) > 0 ? MAX_REQUEST_TIMEOUT : leaseTtl;
    }

    private record OwnerKey(String name, Thread thread) {}

    /** The lock called {@code name}: its contenders' keys are {@code <prefix>/<name>/<lease id in hex>}. */
    public FencedLock lock(String name) {
        LockNames.requireValidName(name);
        ensureOpen(name);
        return new EtcdLockHandle(this, name);
    }

    /**
     * A new participant, out of the election until it joins, in the election called {@code name}: an exclusive
     * lock's name too, whose keys hold the participant id.
     */
    public FencedLeaderElection election(String name, String participantId) {
        LockNames.requireValidName(name);
        LockNames.requireValidParticipantId(participantId, pathOf(name));
        ensureOpen(name);
        return new EtcdElection(this, name, participantId);
    }

    /** A participant that joins: withdrawn when these locks close. */
    void track(EtcdElection participant) {
        participants.add(participant);
        if (closed) {
            participants.remove(participant);
            throw new IllegalStateException(
                    "these EtcdLocks are closed; no participant joins election " + participant.path());
        }
    }

    void forget(EtcdElection participant) {
        participants.remove(participant);
    }

    /** Ends an election term: marks its hold (which interrupts the participant's thread), tells nobody. */
    void endTerm(EtcdHold hold, LeaseLoss cause) {
        if (markInvalid(hold, cause)) {
            warnInvalidated(hold, cause);
        }
    }

    /** The value of the contender key with the smallest create revision under {@code name}, as etcd has it now. */
    Optional<ByteSequence> firstContenderValue(String name) {
        try {
            List<KeyValue> kvs = Requests.retrying(
                            () -> client.getKVClient()
                                    .get(ByteSequence.from(contendersOf(name), StandardCharsets.UTF_8), KeyMutex.FIRST),
                            requestTimeout.toNanos())
                    .getKvs();
            return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0).getValue());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(pathOf(name), e);
        } catch (ExecutionException | TimeoutException e) {
            throw new LockAcquisitionException(
                    "could not read the leader of " + pathOf(name) + ": " + e, pathOf(name), e);
        }
    }

    String pathOf(String name) {
        return prefix + "/" + name;
    }

    /** The key prefix of the lock's contenders, with its trailing slash. */
    String contendersOf(String name) {
        return pathOf(name) + "/";
    }

    private void ensureOpen(String name) {
        if (closed) {
            throw new IllegalStateException("these EtcdLocks are closed; lock " + pathOf(name) + " cannot be acquired");
        }
    }

    /**
     * Acquires for the calling thread: re-enters its hold, or contends with a new one. A hold that loses its
     * lease while it waits (a pause, an expired or revoked lease, a deleted key) is given up and the thread
     * contends again with a new lease and key; only a grant hands out a lease.
     */
    Optional<Lease> acquire(String name, Duration timeout) {
        return acquire(name, timeout, lockHolderValue(), null).map(hold -> new HeldLease(hold, false));
    }

    /** What a lock's key holds: who holds it, for a person reading etcd. */
    private static ByteSequence lockHolderValue() {
        return ByteSequence.from(
                "pid " + ProcessHandle.current().pid() + " thread "
                        + Thread.currentThread().getName(),
                StandardCharsets.UTF_8);
    }

    /**
     * Acquires for the calling thread with keys holding {@code value}; {@code onLoss} (or null) runs right after
     * the grant's hold is marked invalid. Returns the hold: a re-entered one, or a new grant.
     */
    Optional<EtcdHold> acquire(String name, Duration timeout, ByteSequence value, Runnable onLoss) {
        ensureOpen(name);
        Thread me = Thread.currentThread();
        EtcdHold held = owned.get(new OwnerKey(name, me));
        if (held != null) {
            if (!isValid(held)) {
                throw new LeaseLostException(held.path, held.token, held.loss());
            }
            held.entries.incrementAndGet();
            return Optional.of(held);
        }
        long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
        while (true) {
            EtcdHold hold = new EtcdHold(this, name, pathOf(name), me, value, onLoss);
            holds.add(hold);
            boolean granted = false;
            try {
                // registered first, checked after: close() either finds the hold or is seen here
                ensureOpen(name);
                KeyMutex.Outcome outcome = mutex.acquire(hold, timeout == null ? null : deadline);
                switch (outcome) {
                    case TIMED_OUT:
                        return Optional.empty();
                    case LOST:
                        ensureOpen(name);
                        if (timeout != null && deadline - System.nanoTime() <= 0) {
                            // its requests are not cut by the deadline: a lost attempt is the last one once it passed
                            return Optional.empty();
                        }
                        LOG.info(
                                "lease of a waiter for {} lost while it waited ({}); contending again",
                                hold.path,
                                hold.loss());
                        continue;
                    default:
                        // before the hold is the thread's, so that a regressed token is told before its loss
                        noteToken(hold);
                        LOG.debug("acquired {} with fence token {} (key {})", hold.path, hold.token, hold.key);
                        beforeGranted.accept(hold);
                        owned.put(new OwnerKey(name, me), hold);
                        hold.grant();
                        // a loss marked before the grant found the hold not granted, and left it untold (see claimLoss)
                        LeaseLoss lost = hold.loss();
                        if (lost != null) {
                            notifier.tellLater(List.of(hold), lost);
                        }
                        // only now: whatever is thrown before, an Error too, would leave no lease to release the hold
                        granted = true;
                        return Optional.of(hold);
                }
            } finally {
                if (!granted) {
                    discard(hold);
                }
            }
        }
    }

    /**
     * Warns, and tells the listener, when a grant's token is lower than one this process saw on the same lock
     * before (while it remembered the lock). etcd's revision never goes backwards in one cluster.
     */
    private void noteToken(EtcdHold hold) {
        Long previous;
        synchronized (highestTokens) {
            previous = highestTokens.get(hold.name);
            if (previous == null || hold.token > previous) {
                highestTokens.put(hold.name, hold.token);
            }
        }
        if (previous == null || hold.token >= previous) {
            return;
        }
        String explanation = "fence token for lock " + hold.path + " went backwards: this grant got revision "
                + hold.token + ", an earlier grant in this process got " + previous + ". etcd's revision never"
                + " goes backwards in one cluster, so this client now talks to another cluster, or the cluster"
                + " was restored from an older snapshot. Resources that stored " + previous + " refuse writes under "
                + hold.token + " until a grant passes it";
        LOG.warn(explanation);
        try {
            listener.tokenRegressed(hold.path, previous, hold.token, explanation);
        } catch (Throwable e) {
            // an Error too: the hold is granted, and thrown from the acquire it would have no lease to close it
            LOG.error("lock listener failed for {} token {}", hold.path, hold.token, e);
        }
    }

    /** Gives up a hold whose lease was never handed out: its end is nobody's to hear of. */
    private void discard(EtcdHold hold) {
        hold.invalidate(LeaseLoss.RELEASED);
        owned.remove(new OwnerKey(hold.name, hold.owner), hold);
        holds.remove(hold);
        keys.release(hold);
    }

    /**
     * Whether {@code hold} may still be acted on, as far as this process knows. Read in this order: the pause
     * detector's tick, whether the deletion watch's bound passed, the hold's mark, the keep-alive deadline, then the
     * clock. The detector marks every hold
     * before it moves its tick, so a check that reads the tick written after a pause also sees the mark; one that
     * reads the older tick reads the clock after it and sees the gap (see {@code fencing-zookeeper}'s {@code
     * PathLock#isValid}). The deadline only ever moves on a keep-alive answer that proves the lease alive at its
     * send time, and the clock is read after it, so a check that begins after the deadline passed answers false.
     * So does one that begins after the key went unconfirmed by the deletion watch and by reads for the TTL.
     */
    boolean isValid(EtcdHold hold) {
        PauseDetector.Tick tick = pauses.lastTick();
        // before the mark: the deletion watch marks a hold whose key went unconfirmed for the TTL, then forgets
        // when it went unconfirmed, so a check that finds it forgotten also finds the mark
        boolean lapsed = keys.deletions.lapsed(hold);
        betweenValidityReads.run();
        if (hold.loss() != null) {
            return false;
        }
        if (hold.deadlinePassed()) {
            lostLater(hold, LeaseLoss.SESSION_LOST);
            return false;
        }
        if (lapsed) {
            lostLater(hold, LeaseLoss.CONNECTION_SUSPENDED);
            return false;
        }
        if (pauses.pausedSince(tick)) {
            lostLater(hold, LeaseLoss.PAUSE_DETECTED);
            return false;
        }
        return true;
    }

    /**
     * Reads the holder's key (a linearizable read, so a lagging member cannot report a deleted key as present):
     * it must exist with the grant's create revision and lease, not written since its creation. Anything else, or no
     * answer within the request timeout, ends the grant with {@link LeaseLoss#NODE_GONE}.
     */
    boolean verify(EtcdHold hold) {
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw interruptedVerify(hold, new InterruptedException());
        }
        try {
            GetResponse response =
                    client.getKVClient().get(hold.keyBytes).get(requestTimeout.toNanos(), TimeUnit.NANOSECONDS);
            List<KeyValue> kvs = response.getKvs();
            if (KeyDeletionWatch.asCreated(kvs, hold) && kvs.get(0).getLease() == hold.leaseId) {
                return isValid(hold);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw interruptedVerify(hold, e);
        } catch (Exception e) {
            LOG.debug("could not verify lease on {} token {}: {}", hold.path, hold.token, e.toString());
        }
        lostLater(hold, LeaseLoss.NODE_GONE);
        return false;
    }

    private static LockInterruptedException interruptedVerify(EtcdHold hold, InterruptedException e) {
        return new LockInterruptedException(
                "interrupted while verifying the lease on " + hold.path + " with fence token " + hold.token
                        + "; the lease is unchanged",
                hold.path,
                hold.token,
                e);
    }

    /** One lease of the hold closed; the last one releases the lock. */
    void exit(EtcdHold hold) {
        if (hold.entries.decrementAndGet() > 0) {
            return;
        }
        // marked before the key goes, so that no view of the hold (a listener's) reads valid afterwards
        hold.invalidate(LeaseLoss.RELEASED);
        owned.remove(new OwnerKey(hold.name, hold.owner), hold);
        holds.remove(hold);
        keys.release(hold);
    }

    /** Starts keeping the hold's new etcd lease alive, its first deadline counted from the grant's send time. */
    void leaseGranted(EtcdHold hold, long sentAtNanos, long sentAtWallMillis, long grantedTtlSeconds) {
        hold.firstDeadline(sentAtNanos, sentAtWallMillis, grantedTtlSeconds);
        keepAlives.start(hold);
    }

    /**
     * Marks the hold and tells the listener on the listener's own thread, never on the calling one: a loss found by
     * the holder's own check ({@code isValid()}, {@code verify()}, an acquire) would otherwise be told on the
     * holder's thread, and a listener that tells the worker to stop and waits for it (what the listener's javadoc
     * asks for) would wait for itself.
     */
    void lostLater(EtcdHold hold, LeaseLoss cause) {
        if (markInvalid(hold, cause)) {
            notifier.tellLater(List.of(hold), cause);
        }
    }

    private boolean markInvalid(EtcdHold hold, LeaseLoss cause) {
        if (!hold.invalidate(cause)) {
            return false;
        }
        keepAlives.stop(hold);
        return true;
    }

    private static void warnInvalidated(EtcdHold hold, LeaseLoss cause) {
        LOG.warn(
                "lease on {} with fence token {} invalidated: {}; the holder must stop writing under it",
                hold.path,
                hold.token,
                cause);
    }

    private List<EtcdHold> invalidateAll(LeaseLoss cause) {
        List<EtcdHold> marked = new ArrayList<>();
        for (EtcdHold hold : holds) {
            if (markInvalid(hold, cause)) {
                marked.add(hold);
            }
        }
        return marked;
    }

    /**
     * Whether the caller, which found the hold marked, is the one to tell the listener of its loss: true once per
     * hold, to the first caller that finds it granted. A marker reads whether the hold is granted after it marked
     * it, and an acquire reads the mark after it granted the hold: whatever their interleaving, one of them at least
     * finds both, and when both do, only one tells. A release does not take the grant back: a loss marked before it
     * (the lease reads lost, not released) is told even when its marker gets here after the release.
     */
    private boolean claimLoss(EtcdHold hold) {
        if (!hold.granted() || !hold.claimLoss()) {
            return false;
        }
        warnInvalidated(hold, hold.loss());
        return true;
    }

    /** The pause detector's callback: marks every hold before it returns, and so before the tick moves. */
    private void paused(Duration stopped, Duration tolerance) {
        List<EtcdHold> marked = invalidateAll(LeaseLoss.PAUSE_DETECTED);
        if (!marked.isEmpty()) {
            LOG.warn(
                    "this JVM was stopped for {} ms, longer than the pause tolerance of {} ms",
                    stopped.toMillis(),
                    tolerance.toMillis());
            notifier.tellLater(marked, LeaseLoss.PAUSE_DETECTED);
        }
    }

    /** Test hook: runs in every validity check between its read of the detector's tick and its read of the mark. */
    void betweenValidityReads(Runnable hook) {
        this.betweenValidityReads = Objects.requireNonNull(hook);
    }

    /** Test hook: runs on the pause detector's thread in each round, before it reads the clock. */
    void beforeDetectorTick(Runnable hook) {
        this.beforeDetectorTick = Objects.requireNonNull(hook);
    }

    /** Test hook: told (waiter's key, predecessor's key) each time a waiter starts watching a predecessor. */
    void predecessorWatched(BiConsumer<String, String> hook) {
        this.predecessorWatched = Objects.requireNonNull(hook);
    }

    void watchingPredecessor(EtcdHold waiter, String predecessorKey) {
        predecessorWatched.accept(waiter.key, predecessorKey);
    }

    /** Test hook: told each lease grant request an acquire sends, on the acquiring thread, right after it. */
    void grantSent(Consumer<CompletableFuture<LeaseGrantResponse>> hook) {
        this.grantSent = Objects.requireNonNull(hook);
    }

    void grantSent(CompletableFuture<LeaseGrantResponse> grant) {
        grantSent.accept(grant);
    }

    /**
     * Test hook: runs on the acquiring thread once the mutex granted a hold, before the hold becomes the thread's
     * (before a loss marked from then on is told of).
     */
    void beforeGranted(Consumer<EtcdHold> hook) {
        this.beforeGranted = Objects.requireNonNull(hook);
    }

    /** Test hook: the holds now open, waiting contenders' too. */
    Set<EtcdHold> holdsForTest() {
        return Set.copyOf(holds);
    }

    /** The hold behind a lease made here, for tests. */
    static EtcdHold holdOf(Lease lease) {
        return (EtcdHold) ((HeldLease) lease).hold();
    }

    PauseClock pauses() {
        return pauses;
    }

    /**
     * Stops the pause detector and the keep-alives (so the etcd leases of open holds expire within a TTL),
     * invalidates every open lease with {@link LeaseLoss#LOCKS_CLOSED}, wakes waiting acquires (which throw
     * {@link IllegalStateException}), and refuses acquires from now on. Safe to call twice.
     */
    @Override
    public void close() {
        closed = true;
        List<EtcdHold> marked = invalidateAll(LeaseLoss.LOCKS_CLOSED);
        pauses.close();
        keys.close();
        keepAlives.close();
        notifier.tellAll(marked, LeaseLoss.LOCKS_CLOSED);
        for (EtcdElection participant : participants) {
            participant.close();
        }
    }

    boolean isClosed() {
        return closed;
    }
}
