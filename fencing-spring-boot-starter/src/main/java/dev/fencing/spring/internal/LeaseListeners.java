package dev.fencing.spring.internal;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The listener of the auto-configured FencedLocks: passes every event to each {@link FencedLockListener}
 * bean of the application. The beans are looked up when an event comes, not when the locks are built, so
 * a listener may itself depend on the locks. The lock client has already logged the event.
 */
public final class LeaseListeners implements FencedLockListener {
    private static final Logger LOG = LoggerFactory.getLogger(LeaseListeners.class);

    private final ObjectProvider<FencedLockListener> listeners;

    public LeaseListeners(ObjectProvider<FencedLockListener> listeners) {
        this.listeners = listeners;
    }

    @Override
    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
        listeners.orderedStream().forEach(l -> {
            try {
                l.leaseInvalidated(lease, cause);
            } catch (RuntimeException e) {
                LOG.error("lease listener {} failed on {} (token {})", l, lease.path(), lease.token(), e);
            }
        });
    }

    @Override
    public void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {
        listeners.orderedStream().forEach(l -> {
            try {
                l.tokenRegressed(lockPath, previousToken, newToken, explanation);
            } catch (RuntimeException e) {
                LOG.error("lease listener {} failed on the token regression of {}", l, lockPath, e);
            }
        });
    }
}
