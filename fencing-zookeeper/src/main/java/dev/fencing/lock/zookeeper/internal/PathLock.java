package dev.fencing.lock.zookeeper.internal;

import dev.fencing.FenceTokens;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.lock.zookeeper.FenceTokenExhaustedException;
import dev.fencing.lock.zookeeper.ForeignLockParentException;
import dev.fencing.lock.zookeeper.TokenSource;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state of one lock path and kind in this process while anyone uses it: Curator's mutex, the
 * threads' holds, and the highest token seen. {@link LockRegistry} drops it when the last user leaves.
 * A leader election's participant has one of its own, outside the registry's map, whose nodes carry
 * the participant's id and whose holds interrupt the leader's thread when they are invalidated.
 */
final class PathLock {
    private static final Logger LOG = LoggerFactory.getLogger(PathLock.class);

    private final LockRegistry registry;
    private final String path;
    private final TokenSource source;
    private final LockKind kind;
    private final Consumer<Hold> onLoss;
    private final TokenLockDriver driver;
    private final TokenMutex mutex;
    private final ConcurrentMap<Thread, Hold> holds = new ConcurrentHashMap<>();
    private final AtomicLong highestToken = new AtomicLong();
    /** Acquires in flight plus live holds; changed only inside the registry's map compute for this path. */
    int users;

    PathLock(LockRegistry registry, String path, TokenSource source, LockKind kind) {
        this(registry, path, source, kind, null, null);
    }

    PathLock(
            LockRegistry registry,
            String path,
            TokenSource source,
            LockKind kind,
            byte[] nodeData,
            Consumer<Hold> onLoss) {
        this.registry = registry;
        this.path = path;
        this.source = source;
        this.kind = kind;
        this.onLoss = onLoss;
        this.driver = new TokenLockDriver(registry, source, kind, path);
        this.mutex = new TokenMutex(registry.client, path, driver, nodeData);
    }

    LockKind kind() {
        return kind;
    }

    /** The calling thread's hold, or null. */
    Hold holdOfCurrentThread() {
        return holds.get(Thread.currentThread());
    }

    String path() {
        return path;
    }

    TokenSource tokenSource() {
        return source;
    }

    /**
     * Names the ensemble when ZooKeeper could not be reached: the lock path alone does not say which address is
     * wrong or down.
     */
    private String where(Exception failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof KeeperException.ConnectionLossException
                    || t instanceof KeeperException.SessionExpiredException
                    || t instanceof KeeperException.OperationTimeoutException) {
                return ": no answer from ZooKeeper at "
                        + registry.client.getZookeeperClient().getCurrentConnectionString();
            }
        }
        return "";
    }

    /**
     * Acquires for the calling thread, which has checked this lock out of the registry; the checkout is
     * handed to the new hold, or given back here if there is none.
     */
    Optional<Lease> acquire(Duration timeout) {
        boolean keepCheckout = false;
        try {
            Thread me = Thread.currentThread();
            Hold held = holds.get(me);
            if (held != null) {
                if (!isValid(held)) {
                    throw new LeaseLostException(path, held.token, held.loss());
                }
                held.entries.incrementAndGet();
                return Optional.of(new HeldLease(held, false));
            }
            if (kind == LockKind.WRITE && registry.holdOfCurrentThread(path, LockKind.READ) != null) {
                // Curator's write node would queue behind this thread's own read node and wait for it: until the
                // timeout, or for ever
                throw new IllegalStateException("the read lock of " + path + " held by this thread cannot be"
                        + " upgraded to the write lock: release the read lock first (every lease of it), then"
                        + " acquire the write lock");
            }
            if (kind == LockKind.READ) {
                Hold write = registry.writeHoldOfCurrentThread(path);
                if (write != null && !write.lock.isValid(write)) {
                    // a downgrade takes the write node's place in the order: not from a node that may be gone
                    throw new LeaseLostException(path, write.token, write.loss());
                }
            }
            TokenLockDriver.Attempt attempt = driver.begin();
            try {
                try {
                    if (timeout == null) {
                        mutex.acquire();
                    } else if (!mutex.acquire(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                        return Optional.empty();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new LockInterruptedException(path, e);
                } catch (ForeignLockParentException | FenceTokenExhaustedException | LeaseLostException e) {
                    throw e; // refused, and its lock node released: the message says why
                } catch (Exception e) {
                    throw new LockAcquisitionException("could not acquire lock " + path + where(e) + ": " + e, path, e);
                } catch (Error e) {
                    // Curator deletes the node of a failed attempt on an Exception only
                    deleteQuietly(attempt.nodePath);
                    throw e;
                }
                Hold hold = grant(me, attempt);
                keepCheckout = true;
                return Optional.of(new HeldLease(hold, false));
            } finally {
                driver.end();
            }
        } finally {
            if (!keepCheckout) {
                registry.checkin(this);
            }
        }
    }

    /**
     * Reads the token of the node Curator granted and registers the hold. Whatever is thrown on the way, an
     * {@link Error} too (an assertion, an {@code OutOfMemoryError}), leaves no node and no hold behind: no lease is
     * handed out, so nothing else would ever release the node, and every other contender would wait until the
     * session ends.
     */
    private Hold grant(Thread me, TokenLockDriver.Attempt attempt) {
        Hold hold = null;
        try {
            registry.beforeRegistering();
            hold = newHold(me, attempt);
            holds.put(me, hold);
            registry.register(
                    hold,
                    registry.client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs(),
                    attempt.disruptionsBeforeCreate);
            registry.watchLater(hold);
            noteToken(hold.token);
            registry.afterRegistering();
        } catch (Throwable e) {
            abandon(hold);
            throw e;
        }
        LOG.debug("acquired {} with fence token {}", path, hold.token);
        return hold;
    }

    private Hold newHold(Thread me, TokenLockDriver.Attempt attempt) {
        String node = mutex.heldNodePath();
        try {
            long czxid = attempt.czxid;
            long owner = attempt.ephemeralOwner;
            if (!node.equals(attempt.nodePath) || czxid == 0) {
                // a retried create found its node by GUID and brought back no Stat
                Stat stat = statOf(node);
                czxid = stat.getCzxid();
                owner = stat.getEphemeralOwner();
            }
            long token;
            if (attempt.downgradedFrom != null) {
                // a read grant under this thread's write hold: the write's token, whatever the source
                token = attempt.downgradedFrom.token;
            } else if (source == TokenSource.SEQUENCE) {
                token = sequenceToken(node, attempt);
            } else {
                token = zxidToken(czxid, attempt);
                ensureZxidHistory();
            }
            FenceTokens.requirePositive(token, "lock " + path);
            return new Hold(this, node, token, owner, attempt.generationBeforeCreate, me, onLoss);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(
                    "interrupted while reading lock node " + node + " of " + path + "; no token was issued",
                    path,
                    0,
                    e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new LockAcquisitionException("could not read the token of lock node " + node, path, e);
        }
    }

    /** Undoes a grant that fails before its lease is handed out; {@code hold} is null if none was made yet. */
    private void abandon(Hold hold) {
        if (hold != null) {
            hold.invalidate(LeaseLoss.RELEASED);
            holds.remove(hold.owner, hold);
            registry.unregister(hold);
        }
        releaseQuietly(null); // a failed release is worth a warning: the node was never handed out
    }

    private long sequenceToken(String node, TokenLockDriver.Attempt attempt) {
        if (attempt.base.isEmpty()) {
            String absolute = ZKPaths.fixForNamespace(registry.client.getNamespace(), path);
            // Adopting needs the history too: a later deletion of the parent finds its base there.
            throw new ForeignLockParentException(
                    "lock parent " + absolute + " has no '" + LockParents.MARKER_PREFIX + "<n>' marker child, so"
                            + " it was not made by this library: a plain Curator lock's CONTAINER parent, a node"
                            + " made by hand or by an older fencing-zookeeper, or its marker was deleted. Its sequence"
                            + " counter may have restarted since tokens were last granted under it, so no token"
                            + " was issued. Move the lock to a fresh path (with either token source), or, if you"
                            + " know that no token above N was ever stored by the resources this lock protects,"
                            + " adopt the parent with two commands, in this order: create "
                            + LockParents.historyOf(absolute) + " N (or set it to N if it exists), then create "
                            + absolute + "/" + LockParents.MARKER_PREFIX + "N (N = 0 if the parent was never"
                            + " deleted since its first grant). Without the history node, a later deletion of"
                            + " the parent would restart its tokens",
                    path);
        }
        return SequenceTokens.token(path, node, kind.nodeName, attempt.base.getAsLong(), registry.sequenceWrapMargin);
    }

    /**
     * A ZXID lock refuses a SEQUENCE lock's parent: its zxid token lies far above the sequence, so a
     * SEQUENCE grant after it, in this process or another, would get a lower token.
     */
    private long zxidToken(long czxid, TokenLockDriver.Attempt attempt) {
        if (attempt.base.isPresent()) {
            throw new ForeignLockParentException(
                    "lock parent " + path + " has a '" + LockParents.marker(attempt.base.getAsLong())
                            + "' marker child: it is the parent of a TokenSource.SEQUENCE lock, whose tokens"
                            + " (base + sequence + 1) would come out below this grant's zxid token " + czxid
                            + " if a SEQUENCE holder followed it, so no token was issued. Use"
                            + " TokenSource.SEQUENCE for this path, or move the ZXID lock to a fresh path",
                    path);
        }
        return czxid;
    }

    /**
     * Before the first ZXID token on this path leaves this process, the path's history must say zxid:
     * else, once a parent found here without a marker (a plain Curator lock's CONTAINER, one made by
     * hand) is reaped or deleted, a SEQUENCE lock could create it anew with tokens far below this one.
     * Remembered per registry, so it costs one read per path, not per grant.
     */
    private void ensureZxidHistory() throws Exception {
        if (!registry.knowsZxidHistory(path)) {
            LockParents.recordZxidHistory(registry.client, path, registry.acl);
            registry.zxidHistoryRecorded(path);
        }
    }

    /** Only reached when a retried create found its node by GUID and so brought back no Stat. */
    private Stat statOf(String node) throws Exception {
        Stat stat = registry.client.checkExists().forPath(node);
        if (stat == null) {
            throw new IllegalStateException("lock node " + node + " vanished right after it was granted");
        }
        return stat;
    }

    private void noteToken(long token) {
        long previous = highestToken.getAndAccumulate(token, Math::max);
        if (token >= previous) {
            return;
        }
        String explanation = source == TokenSource.SEQUENCE
                ? "fence token for lock " + path + " went backwards: this grant got " + token
                        + ", an earlier grant got " + previous + ". Its parent's marker was set by hand to a"
                        + " base that is too low, or the history under " + LockParents.HISTORY_ROOT
                        + " was deleted together with the parent. Resources that stored " + previous
                        + " refuse writes under " + token + " only if no holder with a token between them"
                        + " writes first: move the lock to a fresh path, with either token source."
                : "fence token for lock " + path + " went backwards: this grant got zxid " + token
                        + ", an earlier grant got " + previous + ". Zxids never go backwards on one"
                        + " ensemble, so this client now talks to a different ZooKeeper ensemble.";
        LOG.warn(explanation);
        try {
            registry.listener.tokenRegressed(path, previous, token, explanation);
        } catch (Throwable e) {
            // an Error too: the hold is registered, and thrown from the acquire it would have no lease to close it
            LOG.error("lock listener failed for {} token {}", path, token, e);
        }
    }

    /**
     * Whether {@code hold} may still be acted on, as far as this process knows: a check that begins after
     * a pause longer than the tolerance, after Curator replaced or closed the handle whose session owns the
     * node (or the whole client was closed), while the client is not connected (read from the handle and
     * Curator's flag, not from Curator's connection events, which can be late), or after the hold was marked
     * (connection events, close, release, step-down) answers false.
     *
     * <p>The pause detector writes in this order: it marks every hold, then moves its tick. This check
     * reads in the reverse order: the tick, then the mark, then the clock. Both fields are volatile, so if
     * the tick read here is the one written after a pause, its write came after the marks and the mark read
     * next is seen (happens-before through the tick). If the tick read is the old one, the clock read
     * after it is at least the time this check began, so a check that began after the pause sees the gap
     * (on the wall clock if the machine was suspended: see PauseDetector).
     * Read the other way round (mark, then tick), a check could see the old mark and the new tick and
     * answer true after a detected pause.
     */
    boolean isValid(Hold hold) {
        PauseDetector.Tick tick = registry.pauses().lastTick();
        registry.betweenValidityReads();
        if (hold.loss() != null) {
            return false;
        }
        // the connection before the session: Curator's handle replacement moves the generation, then clears its
        // connected flag, so a check that sees the flag cleared by a replacement also sees the replacement
        boolean disconnected = registry.disconnected(hold);
        registry.betweenConnectionAndSessionReads();
        if (registry.sessionEnded(hold)) {
            registry.sessionLost(hold);
            return false;
        }
        if (disconnected) {
            registry.connectionLost(hold);
            return false;
        }
        if (registry.pauses().pausedSince(tick)) {
            registry.pauseSeen(hold);
            return false;
        }
        return true;
    }

    /**
     * Syncs the server this client talks to with the leader, then reads the holder's node. A node found gone
     * or not this session's, or no answer, ends the hold with the cause {@link #isValid} finds, if it finds
     * one, else with NODE_GONE. An interrupt leaves the lease as it was and the interrupt flag set.
     */
    boolean verify(Hold hold) {
        try {
            if (sync(hold.nodePath)) {
                Stat stat = registry.client.checkExists().forPath(hold.nodePath);
                long session =
                        registry.client.getZookeeperClient().getZooKeeper().getSessionId();
                if (stat != null && stat.getEphemeralOwner() == hold.sessionId && session == hold.sessionId) {
                    return isValid(hold);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(
                    "interrupted while verifying the lease on " + path + " with fence token " + hold.token
                            + "; the lease is unchanged",
                    path,
                    hold.token,
                    e);
        } catch (Exception e) {
            LOG.debug("could not verify lease on {} token {}: {}", path, hold.token, e.toString());
        }
        // The node is gone, not this session's, or unread. What this process knows comes first: after Curator
        // replaced its handle the node went with the closed session (SESSION_LOST, as every lease of that session
        // reads), and a read that failed on a lost connection found no node gone.
        if (isValid(hold)) {
            registry.lostLater(hold, LeaseLoss.NODE_GONE);
        }
        return false;
    }

    /** Curator runs sync only in the background; wait for it, at most a session timeout. */
    private boolean sync(String node) throws Exception {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        CountDownLatch synced = new CountDownLatch(1);
        AtomicInteger resultCode = new AtomicInteger(Integer.MIN_VALUE);
        registry.client
                .sync()
                .inBackground((client, event) -> {
                    resultCode.set(event.getResultCode());
                    synced.countDown();
                })
                .forPath(node);
        int timeout = registry.client.getZookeeperClient().getZooKeeper().getSessionTimeout();
        return synced.await(Math.max(timeout, 1_000), TimeUnit.MILLISECONDS)
                && resultCode.get() == KeeperException.Code.OK.intValue();
    }

    void exit(Hold hold) {
        if (hold.entries.decrementAndGet() > 0) {
            return;
        }
        // marked before the node goes, so that no view of the hold (a listener's) reads valid afterwards
        hold.invalidate(LeaseLoss.RELEASED);
        holds.remove(hold.owner, hold);
        registry.unregister(hold);
        try {
            releaseQuietly(hold);
        } finally {
            registry.checkin(this);
        }
    }

    /** Deletes a node that Curator created and never handed out; null for none. */
    private void deleteQuietly(String node) {
        if (node == null) {
            return;
        }
        // an interrupted thread still deletes: Curator's delete would fail at once on the flag
        boolean interrupted = Thread.interrupted();
        try {
            registry.client.delete().guaranteed().forPath(node);
        } catch (KeeperException.NoNodeException gone) {
            // deleted already, or never created
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (Exception e) {
            LOG.warn(
                    "could not delete lock node {} of {}: {}; ZooKeeper deletes it when the session ends",
                    node,
                    path,
                    e.toString());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void releaseQuietly(Hold hold) {
        // an interrupted thread still releases: Curator's delete would fail at once on the flag
        boolean interrupted = Thread.interrupted();
        try {
            mutex.release();
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (Exception e) {
            // The node goes with the session if Curator's guaranteed delete cannot remove it now.
            if (hold == null || hold.loss() == null) {
                LOG.warn(
                        "could not release lock {}: {}; ZooKeeper deletes the node when the session ends",
                        path,
                        e.toString());
            } else {
                LOG.debug("release of lost lease on {} token {} failed: {}", path, hold.token, e.toString());
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
