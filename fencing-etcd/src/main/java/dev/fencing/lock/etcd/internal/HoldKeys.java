package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this process does with a hold's key and etcd lease on the server besides keeping the lease alive: it
 * watches the key, renews the lease once before a late grant, and deletes the key and revokes the lease on
 * release.
 */
final class HoldKeys {
    private static final Logger LOG = LoggerFactory.getLogger(HoldKeys.class);

    private final EtcdLockRegistry registry;
    private final KeepAlives keepAlives;

    HoldKeys(EtcdLockRegistry registry, KeepAlives keepAlives) {
        this.registry = registry;
        this.keepAlives = keepAlives;
    }

    /**
     * Watches the hold's own key from the revision after its creation: a deletion by anyone but the holder (an
     * operator, a revoked or expired lease) ends the hold with {@link LeaseLoss#NODE_GONE}. A watch that fails
     * (a compacted revision, a closed client) is replaced after a read that finds the key still there.
     */
    void watch(EtcdHold hold, long fromRevision) {
        if (hold.loss() != null) {
            return;
        }
        WatchOption option =
                WatchOption.builder().withRevision(fromRevision).withNoPut(true).build();
        AtomicReference<Watch.Watcher> self = new AtomicReference<>();
        Watch.Watcher watcher = registry.client
                .getWatchClient()
                .watch(
                        hold.keyBytes,
                        option,
                        response -> {
                            for (WatchEvent event : response.getEvents()) {
                                if (event.getEventType() == WatchEvent.EventType.DELETE) {
                                    registry.lostLater(hold, LeaseLoss.NODE_GONE);
                                }
                            }
                        },
                        failure -> {
                            // jetcd resumes a watcher by itself after a retryable error, besides telling us: the
                            // one that failed is replaced below, so it is closed, and off jetcd's lock, which
                            // this callback runs under; otherwise every failure would leave one more watch open
                            keepAlives.now(() -> closeQuietly(self.get()));
                            rewatch(hold, failure);
                        });
        self.set(watcher);
        hold.ownKeyWatch = watcher;
        if (hold.loss() != null) {
            closeQuietly(watcher); // a release that ran meanwhile may have closed the watch this one replaces
        }
    }

    private static void closeQuietly(Watch.Watcher watcher) {
        if (watcher == null) {
            return;
        }
        try {
            watcher.close();
        } catch (RuntimeException e) {
            LOG.debug("could not close a watch: {}", e.toString());
        }
    }

    private void rewatch(EtcdHold hold, Throwable failure) {
        if (hold.loss() != null || registry.isClosed()) {
            return;
        }
        LOG.debug("watch of lock key {} failed: {}; reading it again", hold.key, failure.toString());
        registry.client.getKVClient().get(hold.keyBytes).whenComplete((response, readFailure) -> {
            if (readFailure != null) {
                // the keep-alive deadline still ends the hold if etcd stays out of reach
                keepAlives.later(() -> rewatch(hold, readFailure));
            } else if (response.getKvs().isEmpty() || response.getKvs().get(0).getCreateRevision() != hold.token) {
                registry.lostLater(hold, LeaseLoss.NODE_GONE);
            } else {
                watch(hold, response.getHeader().getRevision() + 1);
            }
        });
    }

    /**
     * Makes sure a waiter is not granted with a keep-alive deadline that passed while it waited (its keep-alives
     * went unanswered for a while, say during a leader election): one keep-alive, sent now, answered with a TTL,
     * proves the etcd lease alive at its send time, and with it the key, which the lease has carried since its
     * creation (a deleted key does not come back with the same create revision). False if etcd answers that the
     * lease is gone; a lease that gets no answer is granted as it is, and reads invalid once its deadline passes.
     */
    boolean renewBeforeGrant(EtcdHold hold) {
        if (hold.validUntilNanos() - System.nanoTime() > keepAlives.periodNanos()) {
            return true;
        }
        long sent = System.nanoTime();
        long sentWall = System.currentTimeMillis();
        try {
            LeaseKeepAliveResponse answer = Requests.retrying(
                    () -> registry.client.getLeaseClient().keepAliveOnce(hold.leaseId), keepAlives.periodNanos());
            if (answer.getTTL() <= 0) {
                registry.invalidate(hold, LeaseLoss.SESSION_LOST);
                return false;
            }
            hold.aliveUntil(sent, sentWall, answer.getTTL());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(hold.path, e);
        } catch (ExecutionException e) {
            if (KeepAlives.leaseNotFound(e)) {
                registry.invalidate(hold, LeaseLoss.SESSION_LOST);
                return false;
            }
        } catch (TimeoutException e) {
            // granted as it is
        }
        return true;
    }

    /**
     * Stops the keep-alives and the watch, deletes the key (the next waiter is told at once; not a key found with
     * another lease) and revokes the etcd lease without waiting. Never throws: a key that cannot be deleted goes when its lease expires.
     */
    void release(EtcdHold hold) {
        keepAlives.stop(hold);
        closeQuietly(hold.ownKeyWatch);
        if (hold.leaseId == 0) {
            return;
        }
        if (!hold.foreignKey) {
            deleteKey(hold);
        }
        revoke(hold);
    }

    private void deleteKey(EtcdHold hold) {
        boolean interrupted = Thread.interrupted();
        try {
            Requests.retrying(
                    () -> registry.client.getKVClient().delete(hold.keyBytes), registry.requestTimeout.toNanos());
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (Exception e) {
            LOG.warn(
                    "could not delete lock key {} of {}: {}; etcd deletes it when its lease expires, within {} s",
                    hold.key,
                    hold.path,
                    e.toString(),
                    registry.ttlSeconds);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void revoke(EtcdHold hold) {
        registry.client.getLeaseClient().revoke(hold.leaseId).whenComplete((ok, failure) -> {
            if (failure != null) {
                LOG.debug(
                        "revoke of etcd lease {} of {} failed: {}",
                        Long.toHexString(hold.leaseId),
                        hold.path,
                        failure.toString());
            }
        });
    }
}
