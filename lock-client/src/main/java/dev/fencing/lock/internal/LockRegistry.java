package dev.fencing.lock.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.TokenSource;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.PathUtils;
import org.apache.zookeeper.data.ACL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shared state of the locks made on one client: the lock instances (one per path, so re-entry works
 * however the caller looks the lock up), the live holds, and the two things that invalidate them.
 */
public final class LockRegistry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LockRegistry.class);
    private static final long MIN_DEFAULT_TOLERANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    final CuratorFramework client;
    final List<ACL> acl;
    final FencedLockListener listener;
    final int sequenceWrapMargin;

    private final ConcurrentMap<String, DefaultFencedLock> locks = new ConcurrentHashMap<>();
    private final Set<Hold> holds = ConcurrentHashMap.newKeySet();
    private final ConnectionStateListener stateListener = this::stateChanged;
    private final Long explicitToleranceNanos;
    private final Thread pauseDetector;
    private volatile long toleranceNanos;
    private volatile long lastTickNanos = System.nanoTime();
    private volatile boolean closed;

    public LockRegistry(
            CuratorFramework client,
            List<ACL> acl,
            Duration pauseTolerance,
            FencedLockListener listener,
            int sequenceWrapMargin) {
        this.client = client;
        this.acl = acl;
        this.listener = listener;
        this.sequenceWrapMargin = sequenceWrapMargin;
        this.explicitToleranceNanos = pauseTolerance == null ? null : pauseTolerance.toNanos();
        this.toleranceNanos = explicitToleranceNanos != null ? explicitToleranceNanos : MIN_DEFAULT_TOLERANCE_NANOS;
        client.getConnectionStateListenable().addListener(stateListener);
        this.pauseDetector = new Thread(this::detectPauses, "fenced-lock-pause-detector");
        pauseDetector.setDaemon(true);
        pauseDetector.start();
    }

    public FencedLock lock(String path, TokenSource source) {
        validatePath(path);
        DefaultFencedLock lock = locks.computeIfAbsent(path, p -> new DefaultFencedLock(this, p, source));
        if (lock.tokenSource() != source) {
            throw new IllegalArgumentException("lock path '" + path + "' is already used with token source "
                    + lock.tokenSource() + " in this process, not " + source
                    + "; all users of one lock path must use the same token source");
        }
        return lock;
    }

    static void validatePath(String path) {
        Objects.requireNonNull(path, "lock path");
        if (path.isEmpty()) {
            throw new IllegalArgumentException("lock path must not be empty; use a node such as /locks/<resource>");
        }
        if ("/".equals(path)) {
            throw new IllegalArgumentException(
                    "lock path '/' is the ZooKeeper root; use a node such as /locks/<resource>");
        }
        try {
            PathUtils.validatePath(path);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lock path '" + path + "' is invalid: " + e.getMessage(), e);
        }
    }

    void register(Hold hold, int negotiatedSessionTimeoutMillis) {
        if (explicitToleranceNanos == null && negotiatedSessionTimeoutMillis > 0) {
            toleranceNanos = Math.max(
                    MIN_DEFAULT_TOLERANCE_NANOS, TimeUnit.MILLISECONDS.toNanos(negotiatedSessionTimeoutMillis) / 3);
        }
        holds.add(hold);
    }

    void unregister(Hold hold) {
        holds.remove(hold);
    }

    /** True when this JVM has not run the pause detector for longer than the tolerance: it was frozen. */
    boolean pausedTooLong() {
        return System.nanoTime() - lastTickNanos > toleranceNanos;
    }

    void invalidate(Hold hold, LeaseLoss cause) {
        if (!hold.invalidate(cause)) {
            return;
        }
        log.warn(
                "lease on {} with fence token {} invalidated: {}; the holder must stop writing under it",
                hold.lock.path(),
                hold.token,
                cause);
        try {
            listener.leaseInvalidated(new DefaultLease(hold, true), cause);
        } catch (RuntimeException e) {
            log.error("lease listener failed for {} token {}", hold.lock.path(), hold.token, e);
        }
    }

    private void invalidateAll(LeaseLoss cause) {
        for (Hold hold : holds) {
            invalidate(hold, cause);
        }
    }

    private void stateChanged(CuratorFramework client, ConnectionState state) {
        switch (state) {
            case SUSPENDED -> invalidateAll(LeaseLoss.CONNECTION_SUSPENDED);
            case LOST -> invalidateAll(LeaseLoss.SESSION_LOST);
            default -> log.info("ZooKeeper connection {}", state);
        }
    }

    private void detectPauses() {
        while (!closed) {
            long tolerance = toleranceNanos;
            long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(5), Math.min(tolerance / 4, 50_000_000L));
            LockSupport.parkNanos(tick);
            long now = System.nanoTime();
            // Invalidate before moving the tick forward, so no holder sees a fresh tick with a stale lease.
            if (now - lastTickNanos > tolerance && !holds.isEmpty()) {
                log.warn(
                        "this JVM was stopped for {} ms, longer than the pause tolerance of {} ms",
                        TimeUnit.NANOSECONDS.toMillis(now - lastTickNanos),
                        TimeUnit.NANOSECONDS.toMillis(tolerance));
                invalidateAll(LeaseLoss.PAUSE_DETECTED);
            }
            lastTickNanos = now;
        }
    }

    @Override
    public void close() {
        closed = true;
        client.getConnectionStateListenable().removeListener(stateListener);
        pauseDetector.interrupt();
    }
}
