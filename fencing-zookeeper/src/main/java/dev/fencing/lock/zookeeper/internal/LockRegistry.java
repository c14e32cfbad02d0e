package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.lock.zookeeper.TokenSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shared state of the locks made on one client: the path locks in use (one per path, so re-entry works
 * however the caller looks the lock up, dropped when unused so millions of paths do not fill the
 * heap), the live holds, and the three things that invalidate them: connection events, pauses of this
 * JVM, and {@link #close()}.
 *
 * <p>An event that concerns several holds marks every one of them invalid before the listener hears of
 * any: a listener that is slow on the first must not leave the others reporting themselves valid while
 * another client holds their locks. Every loss but the registry's close is told on a thread of the
 * registry's own, so a slow listener holds up neither Curator's connection-state thread (which must
 * deliver the next SUSPENDED or LOST), nor the pause detector (whose missed ticks would read as a pause),
 * nor the holder's own thread in a check, {@code verify()} or acquire that found the loss.
 */
public final class LockRegistry implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LockRegistry.class);
    /** How many ZXID lock paths with a known history are remembered; a forgotten one costs one read. */
    private static final int ZXID_HISTORIES_REMEMBERED = 65_536;

    final CuratorFramework client;
    final List<ACL> acl;
    final FencedLockListener listener;
    final int sequenceWrapMargin;

    /** The path locks in use, by path and kind: a read/write lock has two, its read and its write lock. */
    private final ConcurrentMap<LockKey, PathLock> locks = new ConcurrentHashMap<>();
    /** Open election participants, withdrawn when these locks close. */
    private final Set<ElectionParticipant> participants = ConcurrentHashMap.newKeySet();

    private final Set<Hold> holds = ConcurrentHashMap.newKeySet();
    /** ZXID lock paths whose history this process has seen say zxid; bounded, so many paths fit the heap. */
    private final Set<String> zxidHistories =
            Collections.newSetFromMap(Collections.synchronizedMap(new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                    return size() > ZXID_HISTORIES_REMEMBERED;
                }
            }));

    private final ConnectionStateListener stateListener = this::stateChanged;
    private final PauseTolerance tolerance;
    private final PauseDetector pauseDetector;
    /**
     * Tells the listener of connection events and pauses, in order; its one thread ends when idle. Never shut down:
     * a grant registered as these locks close is invalid from the start, and is still told here, not on the
     * acquiring thread, the holder's.
     */
    private final ThreadPoolExecutor notifier;
    /** Counts SUSPENDED, LOST and detected pauses; an acquire that saw it change must not hand out a valid lease. */
    private final AtomicLong disruptions = new AtomicLong();

    private volatile LeaseLoss lastDisruption = LeaseLoss.CONNECTION_SUSPENDED;
    private volatile boolean closed;
    private volatile Runnable beforeRegistering = () -> {};
    private volatile Runnable afterRegistering = () -> {};
    private volatile Runnable whenNodeGranted = () -> {};
    private volatile Runnable betweenValidityReads = () -> {};
    private volatile Runnable betweenConnectionAndSessionReads = () -> {};
    private volatile Runnable beforeDetectorTick = () -> {};
    private volatile Runnable beforeNodeGone = () -> {};
    private final NodeWatches nodeWatches;
    /**
     * The handle generation and client state the pause detector last saw; set before its thread starts,
     * then only the detector's thread uses them.
     */
    private long generationSeen;

    private boolean clientStartedSeen;

    public LockRegistry(
            CuratorFramework client,
            List<ACL> acl,
            Duration pauseTolerance,
            FencedLockListener listener,
            int sequenceWrapMargin) {
        this.client = client;
        this.nodeWatches = new NodeWatches(client, this::nodeGone);
        this.acl = acl;
        this.listener = listener;
        this.sequenceWrapMargin = sequenceWrapMargin;
        this.tolerance = new PauseTolerance(pauseTolerance);
        this.notifier = new ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "fenced-lock-listener");
            thread.setDaemon(true);
            return thread;
        });
        notifier.allowCoreThreadTimeOut(true);
        client.getConnectionStateListenable().addListener(stateListener);
        this.generationSeen = handleGeneration();
        this.clientStartedSeen = client.getState() == CuratorFrameworkState.STARTED;
        this.pauseDetector = PauseDetector.builder()
                .threadName("fenced-lock-pause-detector")
                .tolerance(tolerance.initial())
                .eachRound(this::detectorRound)
                .onPause(this::paused)
                .start();
    }

    private record LockKey(String path, LockKind kind) {}

    public FencedLock lock(String path, TokenSource source) {
        return handle(path, source, LockKind.EXCLUSIVE);
    }

    public FencedReadWriteLock readWriteLock(String path, TokenSource source) {
        return new ReadWriteLockHandle(handle(path, source, LockKind.READ), handle(path, source, LockKind.WRITE));
    }

    public FencedLeaderElection election(String path, TokenSource source, String participantId) {
        LockNames.requireValidPath(client.getNamespace(), path);
        ensureOpen(path);
        requireSourceOfLiveLocks(path, source);
        return new ElectionParticipant(this, path, source, participantId);
    }

    /** A participant that joins: withdrawn when these locks close. */
    void track(ElectionParticipant participant) {
        participants.add(participant);
        if (closed) {
            participants.remove(participant);
            throw new IllegalStateException(
                    "these FencedLocks are closed; no participant joins election " + participant.path());
        }
    }

    /** A participant that is out of the election: nothing to withdraw any more. */
    void forget(ElectionParticipant participant) {
        participants.remove(participant);
    }

    private LockHandle handle(String path, TokenSource source, LockKind kind) {
        LockNames.requireValidPath(client.getNamespace(), path);
        ensureOpen(path);
        requireSourceOfLiveLocks(path, source);
        return new LockHandle(this, path, source, kind);
    }

    /** Refuses {@code source} for a path in use here, by any kind of lock, with the other source. */
    private void requireSourceOfLiveLocks(String path, TokenSource source) {
        for (LockKind kind : LockKind.values()) {
            PathLock live = locks.get(new LockKey(path, kind));
            if (live != null) {
                requireSameSource(live, source);
            }
        }
    }

    /** The calling thread's hold of the write lock of the read/write lock at {@code path}, or null. */
    Hold writeHoldOfCurrentThread(String path) {
        return holdOfCurrentThread(path, LockKind.WRITE);
    }

    /** The calling thread's hold of the lock of that kind at {@code path}, or null. */
    Hold holdOfCurrentThread(String path, LockKind kind) {
        PathLock lock = locks.get(new LockKey(path, kind));
        return lock == null ? null : lock.holdOfCurrentThread();
    }

    /** The number of locks with state in this process (a read/write lock counts twice): those being acquired or held. */
    public int liveLocks() {
        return locks.size();
    }

    private void ensureOpen(String path) {
        if (closed) {
            throw new IllegalStateException("these FencedLocks are closed; lock " + path + " cannot be acquired");
        }
    }

    private static void requireSameSource(PathLock lock, TokenSource source) {
        if (lock.tokenSource() != source) {
            throw new IllegalArgumentException("lock path '" + lock.path() + "' is in use with token source "
                    + lock.tokenSource() + " in this process, not " + source
                    + "; all users of one lock path must use the same token source");
        }
    }

    /** The path's shared lock of that kind, counted as used until {@link #checkin}. */
    PathLock checkout(String path, TokenSource source, LockKind kind) {
        ensureOpen(path);
        return locks.compute(new LockKey(path, kind), (key, lock) -> {
            PathLock current = lock != null ? lock : new PathLock(this, path, source, kind);
            requireSameSource(current, source);
            current.users++;
            return current;
        });
    }

    void checkin(PathLock lock) {
        locks.computeIfPresent(new LockKey(lock.path(), lock.kind()), (key, current) -> {
            if (current != lock) {
                return current;
            }
            current.users--;
            return current.users == 0 ? null : current;
        });
    }

    /** Whether this process has already seen the history of ZXID lock path {@code path} say zxid. */
    boolean knowsZxidHistory(String path) {
        return zxidHistories.contains(path);
    }

    void zxidHistoryRecorded(String path) {
        zxidHistories.add(path);
    }

    /**
     * Test hook: runs on the acquiring thread as soon as Curator granted the lock, before anything of
     * the grant (token, owning session, timeout) is read and the hold is registered.
     */
    void beforeRegistering(Runnable hook) {
        this.beforeRegistering = Objects.requireNonNull(hook);
    }

    void beforeRegistering() {
        beforeRegistering.run();
    }

    /**
     * Test hook: runs on the acquiring thread inside Curator's wait for the lock, when the listing of the lock's
     * children says that its node holds the lock, before Curator returns it.
     */
    void whenNodeGranted(Runnable hook) {
        this.whenNodeGranted = Objects.requireNonNull(hook);
    }

    void whenNodeGranted() {
        whenNodeGranted.run();
    }

    /** Test hook: runs on the acquiring thread once its hold is registered, before its lease is handed out. */
    void afterRegistering(Runnable hook) {
        this.afterRegistering = Objects.requireNonNull(hook);
    }

    void afterRegistering() {
        afterRegistering.run();
    }

    /**
     * Registers a new hold, then invalidates it at once if anything happened since its node was created
     * that would have invalidated it had it been registered then. Registering first and checking after
     * leaves no gap: an event either finds the hold in the set or changes what is checked here.
     */
    void register(Hold hold, int negotiatedSessionTimeoutMillis, long disruptionsBeforeCreate) {
        tolerance.adoptSessionTimeout(negotiatedSessionTimeoutMillis, pauseDetector);
        // the owning handle is known before the hold can be seen, so that no scan finds it without one
        ZooKeeper handle = currentHandle();
        long currentSession = handle == null ? 0 : handle.getSessionId();
        if (currentSession == hold.sessionId) {
            hold.ownedBy(
                    handle,
                    handle.getState() == ZooKeeper.States.CONNECTED
                            && !client.getZookeeperClient().isConnected());
        }
        holds.add(hold);
        LeaseLoss loss = lossAtRegistration(
                closed,
                pauseDetector.pausedTooLong(),
                disruptionsBeforeCreate,
                disruptions.get(),
                lastDisruption,
                hold.handleGeneration,
                handleGeneration(),
                hold.sessionId,
                currentSession);
        if (loss != null) {
            lostLater(hold, loss);
        }
    }

    /**
     * Why a hold that has just been registered is already invalid, or null if it is not. The handle and
     * session checks catch an expiry whose LOST event Curator has not delivered yet: the client may
     * already run a new handle, or a new session, while the old one's node, ours, is gone.
     */
    static LeaseLoss lossAtRegistration(
            boolean closed,
            boolean paused,
            long disruptionsBeforeCreate,
            long disruptionsNow,
            LeaseLoss lastDisruption,
            long generationBeforeCreate,
            long generationNow,
            long nodeOwnerSession,
            long currentSession) {
        if (closed) {
            return LeaseLoss.LOCKS_CLOSED;
        }
        if (paused) {
            return LeaseLoss.PAUSE_DETECTED;
        }
        if (disruptionsNow != disruptionsBeforeCreate) {
            return lastDisruption;
        }
        if (generationNow != generationBeforeCreate || currentSession != nodeOwnerSession || nodeOwnerSession == 0) {
            return LeaseLoss.SESSION_LOST;
        }
        return null;
    }

    /**
     * The count an acquire reads before it creates its node. Also sets the default pause tolerance from the
     * session timeout the connection has now: until the first registration it was the 200 ms minimum, and a
     * stall of a starting JVM (class loading, a collection) between this read and the registration then
     * counted as a pause and invalidated the first grant on a 2 s session at once.
     */
    long disruptions() {
        // not getZooKeeper(): it hands out (and so takes from Curator) a pending background exception
        tolerance.adoptSessionTimeout(client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs(), pauseDetector);
        return disruptions.get();
    }

    /**
     * Test hook: keeps an explicit tolerance that is not below the session timeout (see {@link
     * PauseTolerance#keepToleranceAboveSession()}).
     */
    void keepToleranceAboveSession() {
        tolerance.keepToleranceAboveSession();
    }

    /** Curator's current ZooKeeper handle, or null if it has none to give. */
    private ZooKeeper currentHandle() {
        try {
            return client.getZookeeperClient().getZooKeeper();
        } catch (Exception e) {
            return null;
        }
    }

    void unregister(Hold hold) {
        holds.remove(hold);
    }

    /**
     * The pause detector: a validity check reads its tick <em>before</em> it reads a hold's mark, see
     * {@link PathLock#isValid}.
     */
    PauseDetector pauses() {
        return pauseDetector;
    }

    /**
     * Curator's handle generation ({@code CuratorZookeeperClient.getInstanceIndex()}). Curator bumps it in
     * {@code ConnectionState.reset()} (on an expired session, or a changed connect string) <em>before</em>
     * it closes the old handle; closing sends {@code closeSession}, and the server deletes the old session's
     * nodes at once, up to a few hundred milliseconds before Curator reports LOST. A hold whose node was
     * created under an earlier generation belongs to a closed or closing session.
     */
    long handleGeneration() {
        return client.getZookeeperClient().getInstanceIndex();
    }

    /**
     * True when the session that owns {@code hold}'s node is closed or closing, as far as this client can
     * tell without asking: Curator replaced its handle since the node was created (see {@link
     * #handleGeneration()}), the handle that owns the node is closed (an expiry it was told of, or a reset
     * that began before the create read the generation), or the Curator client itself was closed (which
     * closes its session without a LOST event, and without a new generation).
     */
    boolean sessionEnded(Hold hold) {
        if (client.getState() != CuratorFrameworkState.STARTED || handleGeneration() != hold.handleGeneration) {
            return true;
        }
        ZooKeeper owner = hold.owningHandle();
        return owner == null || !owner.getState().isAlive();
    }

    /**
     * True when this client is not connected to a server now, as far as it can tell without asking: the
     * handle that owns {@code hold}'s node is not {@code CONNECTED}, or Curator has taken the connection for
     * lost. Curator's SUSPENDED reaches the registry through its connection-state thread, behind the
     * application's own listeners, and a late one can arrive after the server expired the session and
     * granted the lock to another holder; these two read sooner. When ZooKeeper's client gives up on a
     * silent server (two thirds of the session timeout after it last heard from it), it queues the
     * disconnection for its event thread, where Curator clears its flag, and it moves the handle off {@code
     * CONNECTED} only when it starts to reconnect, which can take a second or two more (longer if a DNS lookup
     * hangs). Neither is bound to come before the server's expiry in every case: see docs/locks.md. Curator's
     * flag is not read for a hold registered while it was false with the handle connected, the flag stuck by
     * the known Curator issue after an expiry, which would otherwise end every new lease at once. A real
     * disconnection whose flag cleared between the grant's last answer and the registration looks the same (the
     * acquiring thread stalled for two thirds of the session timeout); such a hold reads the handle's state only,
     * until a check finds the flag true: the stuck flag is written again when the handle next reconnects, and from
     * then on a disconnection clears it before the handle leaves {@code CONNECTED}, as for any other hold.
     */
    boolean disconnected(Hold hold) {
        ZooKeeper owner = hold.owningHandle();
        boolean flagConnected = client.getZookeeperClient().isConnected();
        if (flagConnected && hold.staleConnectedFlag()) {
            hold.connectedFlagRecovered();
        }
        return owner == null
                || owner.getState() != ZooKeeper.States.CONNECTED
                || (!hold.staleConnectedFlag() && !flagConnected);
    }

    /**
     * Ends {@code hold} and every other hold of its handle that {@link #disconnected} finds, each marked
     * before the listener hears of any, and tells the listener on its own thread, as for SUSPENDED.
     */
    void connectionLost(Hold hold) {
        ZooKeeper owner = hold.owningHandle();
        // a hold whose session ended meanwhile is left to its own check or the detector: SESSION_LOST
        List<Hold> marked = invalidateWhere(
                other -> other.owningHandle() == owner && disconnected(other) && !sessionEnded(other),
                LeaseLoss.CONNECTION_SUSPENDED);
        if (markInvalid(hold, LeaseLoss.CONNECTION_SUSPENDED)) {
            // the check answered invalid for it: marked for good even if the connection came back since the scan
            marked.add(hold);
        }
        tellLater(marked, LeaseLoss.CONNECTION_SUSPENDED);
    }

    /**
     * A check found the hold's session ended (Curator replaced its handle, or the session it owns is gone): marks
     * the hold and every other hold whose session ended, as the detector does when it sees the replacement, and
     * only then tells the listener, on the notifier's thread, so that a slow listener neither holds up the check
     * nor hears of one lease while another of the same session still reads valid.
     */
    void sessionLost(Hold hold) {
        List<Hold> marked = invalidateWhere(this::sessionEnded, LeaseLoss.SESSION_LOST);
        if (markInvalid(hold, LeaseLoss.SESSION_LOST)) {
            marked.add(hold); // released meanwhile, so no longer among the live holds
        }
        tellLater(marked, LeaseLoss.SESSION_LOST);
    }

    /** Has the hold's node watched: its deletion while the hold lives ends it (see {@link NodeWatches}). */
    void watchLater(Hold hold) {
        nodeWatches.watchLater(hold);
    }

    /**
     * A held node was deleted (or was gone when its watch was set): the hold ends with {@code NODE_GONE}, told
     * on the listener's thread, unless the node went with the end of its own session.
     */
    private void nodeGone(Hold hold) {
        beforeNodeGone.run();
        if (sessionEnded(hold)) {
            // the node went with its session (this client closed it, or Curator replaced the handle): that
            // is the loss, and it ends every hold of the session
            sessionLost(hold);
        } else if (markInvalid(hold, LeaseLoss.NODE_GONE)) {
            tellLater(List.of(hold), LeaseLoss.NODE_GONE);
        }
    }

    /** Test hook: whether holds granted from now on have their nodes watched (by default they do). */
    void watchNodes(boolean watch) {
        nodeWatches.enabled(watch);
    }

    /** Test hook: runs on Curator's event thread when a held node's deletion was seen, before the hold is marked. */
    void beforeNodeGone(Runnable hook) {
        this.beforeNodeGone = Objects.requireNonNull(hook);
    }

    /**
     * A check saw a pause the detector has not reported yet: marks that hold only (the gap may be the checking
     * thread's own, not the process's; the detector ends the others when it sees the pause) and tells the
     * listener on the notifier's thread.
     */
    void pauseSeen(Hold hold) {
        if (markInvalid(hold, LeaseLoss.PAUSE_DETECTED)) {
            tellLater(List.of(hold), LeaseLoss.PAUSE_DETECTED);
        }
    }

    /** Test hook: runs in every validity check between its read of the connection and its read of the session. */
    void betweenConnectionAndSessionReads(Runnable hook) {
        this.betweenConnectionAndSessionReads = Objects.requireNonNull(hook);
    }

    void betweenConnectionAndSessionReads() {
        betweenConnectionAndSessionReads.run();
    }

    /** Test hook: runs in every validity check between its read of the detector's tick and its read of the mark. */
    void betweenValidityReads(Runnable hook) {
        this.betweenValidityReads = Objects.requireNonNull(hook);
    }

    void betweenValidityReads() {
        betweenValidityReads.run();
    }

    /** Test hook: runs on the pause detector's thread in each round, before it reads the clock. */
    void beforeDetectorTick(Runnable hook) {
        this.beforeDetectorTick = Objects.requireNonNull(hook);
    }

    /**
     * Invalidates one hold and tells the listener on the notifier's thread, never on the calling thread: that is
     * the holder's own thread here (a grant invalid from the start, a {@code verify()}, a downgrade), and a
     * listener that waits for the holder to stop writing would wait for itself, with the call never returning.
     */
    void lostLater(Hold hold, LeaseLoss cause) {
        if (markInvalid(hold, cause)) {
            tellLater(List.of(hold), cause);
        }
    }

    private boolean markInvalid(Hold hold, LeaseLoss cause) {
        if (!hold.invalidate(cause)) {
            return false;
        }
        LOG.warn(
                "lease on {} with fence token {} invalidated: {}; the holder must stop writing under it",
                hold.lock.path(),
                hold.token,
                cause);
        return true;
    }

    /** Marks every live hold invalid, and only then returns those it marked, for the listener. */
    private List<Hold> invalidateAll(LeaseLoss cause) {
        return invalidateWhere(hold -> true, cause);
    }

    /** Marks every live hold that {@code affected} accepts invalid, and only then returns those it marked. */
    private List<Hold> invalidateWhere(Predicate<Hold> affected, LeaseLoss cause) {
        List<Hold> marked = new ArrayList<>();
        for (Hold hold : holds) {
            if (affected.test(hold) && markInvalid(hold, cause)) {
                marked.add(hold);
            }
        }
        return marked;
    }

    /**
     * Whatever the listener throws, an {@link Error} included, is logged here: thrown on, it would leave the other
     * leases of the event untold, and end {@link #close()} before it withdrew the election participants (see
     * {@link FencedLockListener} for why not even a {@link VirtualMachineError} is thrown on).
     */
    private void tell(Hold hold, LeaseLoss cause) {
        try {
            listener.leaseInvalidated(new HeldLease(hold, true), cause);
        } catch (Throwable e) {
            LOG.error("lease listener failed for {} token {}", hold.lock.path(), hold.token, e);
        }
    }

    private void tellAll(List<Hold> marked, LeaseLoss cause) {
        for (Hold hold : marked) {
            tell(hold, cause);
        }
    }

    /** Counts the disruption first, then invalidates: see {@link #register}. */
    private void disrupted(LeaseLoss cause) {
        lastDisruption = cause;
        disruptions.incrementAndGet();
        tellLater(invalidateAll(cause), cause);
    }

    /** Tells the listener on the notifier's thread, so that the caller is not held up by a slow listener. */
    private void tellLater(List<Hold> marked, LeaseLoss cause) {
        if (marked.isEmpty()) {
            return;
        }
        notifier.execute(() -> tellAll(marked, cause));
    }

    private void stateChanged(CuratorFramework client, ConnectionState state) {
        switch (state) {
            case SUSPENDED -> disrupted(LeaseLoss.CONNECTION_SUSPENDED);
            case LOST -> disrupted(LeaseLoss.SESSION_LOST);
            default -> LOG.info("ZooKeeper connection {}", state);
        }
    }

    /** Runs on the pause detector's thread in each round, before it reads the clock. */
    private void detectorRound() {
        beforeDetectorTick.run();
        detectHandleReplacement();
        nodeWatches.watchDue();
    }

    /**
     * Counts and invalidates on the detector's thread, which moves its tick only after this returns, so
     * no holder sees a fresh tick with a stale lease; counts even with no holds, for acquires that are
     * about to register one.
     */
    private void paused(Duration stopped, Duration tolerance) {
        if (!holds.isEmpty()) {
            LOG.warn(
                    "this JVM was stopped for {} ms, longer than the pause tolerance of {} ms",
                    stopped.toMillis(),
                    tolerance.toMillis());
        }
        disrupted(LeaseLoss.PAUSE_DETECTED);
    }

    /**
     * Ends the holds of a replaced handle without waiting for Curator's LOST, so that listeners hear of it
     * and election terms end within a tick. Every validity check also compares the generation itself, so
     * a check never depends on this having run.
     */
    private void detectHandleReplacement() {
        long generation = handleGeneration();
        boolean started = client.getState() == CuratorFrameworkState.STARTED;
        if (generation == generationSeen && started == clientStartedSeen) {
            return;
        }
        generationSeen = generation;
        clientStartedSeen = started;
        List<Hold> marked = invalidateWhere(this::sessionEnded, LeaseLoss.SESSION_LOST);
        if (!marked.isEmpty()) {
            LOG.warn("Curator replaced its ZooKeeper handle or was closed: the old session's lock nodes are gone"
                    + " or going");
            tellLater(marked, LeaseLoss.SESSION_LOST);
        }
    }

    /**
     * Stops watching, invalidates every open lease with {@link LeaseLoss#LOCKS_CLOSED} (their nodes stay
     * until their owners close them or the session ends) and refuses acquires from now on.
     */
    @Override
    public void close() {
        closed = true;
        client.getConnectionStateListenable().removeListener(stateListener);
        pauseDetector.close();
        tellAll(invalidateAll(LeaseLoss.LOCKS_CLOSED), LeaseLoss.LOCKS_CLOSED);
        for (ElectionParticipant participant : participants) {
            participant.withdrawOnClose();
        }
    }
}
