package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this process does with a hold's key and etcd lease on the server besides keeping the lease alive: it
 * has the key watched for deletions (one watch for all holds), renews the lease once before a late grant, and
 * deletes the key and revokes the lease on release.
 */
final class HoldKeys {
    private static final Logger LOG = LoggerFactory.getLogger(HoldKeys.class);

    private final EtcdLockRegistry registry;
    private final KeepAlives keepAlives;
    final KeyDeletionWatch deletions;

    HoldKeys(EtcdLockRegistry registry, KeepAlives keepAlives) {
        this.registry = registry;
        this.keepAlives = keepAlives;
        this.deletions = new KeyDeletionWatch(registry, keepAlives);
    }

    /** Registers the hold with the deletion watch, before its key is created. */
    void track(EtcdHold hold) {
        deletions.track(hold);
    }

    /**
     * Makes sure the deletion watch covers the hold's key, created at {@code hold.token}: a deletion by anyone but
     * the holder (an operator, a revoked or expired lease) ends the hold with {@link LeaseLoss#NODE_GONE}.
     */
    void watch(EtcdHold hold) {
        deletions.watch(hold);
    }

    /** Closes the deletion watch. */
    void close() {
        deletions.close();
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
     * Stops the keep-alives and the watch's reports to the hold (before its own deletion), deletes the key (the next
     * waiter is told at once; not a key found with another lease) and revokes the etcd lease without waiting. Never
     * throws: a key that cannot be deleted goes when its lease expires.
     */
    void release(EtcdHold hold) {
        keepAlives.stop(hold);
        deletions.forget(hold);
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
