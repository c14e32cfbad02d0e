package dev.fencing.lock.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.LeasedWork;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.TokenSource;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

final class DefaultFencedLock implements FencedLock {
    private static final Logger log = LoggerFactory.getLogger(DefaultFencedLock.class);

    private final LockRegistry registry;
    private final String path;
    private final TokenSource source;
    private final TokenLockDriver driver;
    private final TokenMutex mutex;
    private final ConcurrentMap<Thread, Hold> holds = new ConcurrentHashMap<>();
    private final AtomicLong highestToken = new AtomicLong();

    DefaultFencedLock(LockRegistry registry, String path, TokenSource source) {
        this.registry = registry;
        this.path = path;
        this.source = source;
        this.driver = new TokenLockDriver(registry.acl);
        this.mutex = new TokenMutex(registry.client, path, driver);
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public TokenSource tokenSource() {
        return source;
    }

    @Override
    public Lease acquire() {
        return acquire(null).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout for lock " + path + " must be positive, got " + timeout);
        }
        return acquire(timeout);
    }

    @Override
    public <T> T runLocked(LeasedWork<T> work) {
        Objects.requireNonNull(work, "work");
        try (Lease lease = acquire()) {
            return work.run(lease);
        }
    }

    private Optional<Lease> acquire(Duration timeout) {
        Thread me = Thread.currentThread();
        Hold held = holds.get(me);
        if (held != null) {
            if (!isValid(held)) {
                throw new LeaseLostException(path, held.token, held.loss());
            }
            held.entries.incrementAndGet();
            return Optional.of(new DefaultLease(held, false));
        }
        try {
            if (timeout == null) {
                mutex.acquire();
            } else if (!mutex.acquire(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                return Optional.empty();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(path, e);
        } catch (Exception e) {
            throw new LockAcquisitionException("could not acquire lock " + path + ": " + e, path, e);
        }
        return Optional.of(new DefaultLease(grant(me), false));
    }

    private Hold grant(Thread me) {
        String node = mutex.heldNodePath();
        long czxid = driver.takeCzxid(node);
        long token;
        long sessionId;
        int sessionTimeout;
        try {
            token = source == TokenSource.SEQUENCE
                    ? SequenceTokens.token(path, node, registry.sequenceWrapMargin)
                    : czxid > 0 ? czxid : statOf(node).getCzxid();
            ZooKeeper zk = registry.client.getZookeeperClient().getZooKeeper();
            sessionId = zk.getSessionId();
            sessionTimeout = zk.getSessionTimeout();
        } catch (RuntimeException e) {
            releaseQuietly(null);
            throw e;
        } catch (Exception e) {
            releaseQuietly(null);
            throw new LockAcquisitionException("could not read the token of lock node " + node, path, e);
        }
        Hold hold = new Hold(this, node, token, sessionId, me);
        holds.put(me, hold);
        registry.register(hold, sessionTimeout);
        noteToken(token);
        log.debug("acquired {} with fence token {}", path, token);
        return hold;
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
                        + ", an earlier grant got " + previous + ". The lock's parent node " + path
                        + " was deleted and recreated, so ZooKeeper restarted its sequence counter. Resources"
                        + " that stored " + previous + " will refuse every write under " + token
                        + " (safe, but no progress) until tokens pass " + previous
                        + " again. Never delete lock parents; if they must be deleted, use TokenSource.ZXID."
                : "fence token for lock " + path + " went backwards: this grant got zxid " + token
                        + ", an earlier grant got " + previous + ". Zxids never go backwards on one"
                        + " ensemble, so this client now talks to a different ZooKeeper ensemble.";
        log.warn(explanation);
        try {
            registry.listener.tokenRegressed(path, previous, token, explanation);
        } catch (RuntimeException e) {
            log.error("lock listener failed for {} token {}", path, token, e);
        }
    }

    boolean isValid(Hold hold) {
        if (hold.loss() != null) {
            return false;
        }
        if (registry.pausedTooLong()) {
            registry.invalidate(hold, LeaseLoss.PAUSE_DETECTED);
            return false;
        }
        return true;
    }

    boolean verify(Hold hold) {
        try {
            Stat stat = registry.client.checkExists().forPath(hold.nodePath);
            long session = registry.client.getZookeeperClient().getZooKeeper().getSessionId();
            if (stat != null && stat.getEphemeralOwner() == hold.sessionId && session == hold.sessionId) {
                return isValid(hold);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            log.debug("could not verify lease on {} token {}: {}", path, hold.token, e.toString());
        }
        registry.invalidate(hold, LeaseLoss.NODE_GONE);
        return false;
    }

    void exit(Hold hold) {
        if (hold.entries.decrementAndGet() > 0) {
            return;
        }
        holds.remove(hold.owner, hold);
        registry.unregister(hold);
        releaseQuietly(hold);
    }

    private void releaseQuietly(Hold hold) {
        try {
            mutex.release();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // The node goes with the session if Curator's guaranteed delete cannot remove it now.
            if (hold == null || hold.loss() == null) {
                log.warn(
                        "could not release lock {}: {}; ZooKeeper deletes the node when the session ends",
                        path,
                        e.toString());
            } else {
                log.debug("release of lost lease on {} token {} failed: {}", path, hold.token, e.toString());
            }
        }
    }
}
