package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this process does with a hold's key and etcd lease on the server besides keeping the lease alive: it
 * has the key watched for deletions (one watch for all holds), renews the lease once before a late grant, and
 * revokes the lease on release (etcd deletes the key with it).
 */
final class HoldKeys {
    private static final Logger LOG = LoggerFactory.getLogger(HoldKeys.class);

    private final EtcdLockRegistry registry;
    private final KeepAlives keepAlives;
    final KeyDeletionWatch deletions;
    /** Sends the revoke that a release waits for; a test hook replaces it. */
    private volatile LongFunction<CompletableFuture<?>> revokes;
    /** Sends the keep-alive that renews a waiter's lease before a late grant; a test hook replaces it. */
    private volatile LongFunction<CompletableFuture<LeaseKeepAliveResponse>> renewals;

    HoldKeys(EtcdLockRegistry registry, KeepAlives keepAlives) {
        this.registry = registry;
        this.keepAlives = keepAlives;
        this.deletions = new KeyDeletionWatch(registry, keepAlives);
        this.revokes = leaseId -> registry.client.getLeaseClient().revoke(leaseId);
        this.renewals = leaseId -> KeepAlives.keepAliveOnce(registry.client, leaseId);
    }

    /** Test hook: sends the keep-alive before a late grant (not the holds' periodic ones). */
    void renewalsForTest(LongFunction<CompletableFuture<LeaseKeepAliveResponse>> renewals) {
        this.renewals = Objects.requireNonNull(renewals);
    }

    /** Test hook: sends the revoke that a release waits for (not the one sent after giving up on it). */
    void revokesForTest(LongFunction<CompletableFuture<?>> revokes) {
        this.revokes = Objects.requireNonNull(revokes);
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
     * lease is gone; a lease that gets no answer within a keep-alive period (at most the request timeout) is granted
     * as it is, and reads invalid once its deadline passes.
     */
    boolean renewBeforeGrant(EtcdHold hold) {
        if (hold.validUntilNanos() - System.nanoTime() > keepAlives.periodNanos()) {
            return true;
        }
        long sent = System.nanoTime();
        long sentWall = System.currentTimeMillis();
        try {
            // a period, but never longer than any request: a third of a long TTL would hold the acquire up
            LeaseKeepAliveResponse answer = Requests.retrying(
                    () -> renewals.apply(hold.leaseId),
                    Math.min(keepAlives.periodNanos(), registry.requestTimeout.toNanos()));
            if (answer.getTTL() <= 0) {
                registry.lostLater(hold, LeaseLoss.SESSION_LOST);
                return false;
            }
            hold.aliveUntil(sent, sentWall, answer.getTTL());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(hold.path, e);
        } catch (ExecutionException e) {
            if (KeepAlives.leaseNotFound(e)) {
                registry.lostLater(hold, LeaseLoss.SESSION_LOST);
                return false;
            }
        } catch (TimeoutException e) {
            // granted as it is
        }
        return true;
    }

    /**
     * Stops the keep-alives and the watch's reports to the hold (before its own deletion) and revokes the etcd lease,
     * waiting for the answer: etcd deletes the key with its lease, in the same revision, so the next waiter is told at
     * once and one request does what a delete and a revoke would. A key found with another lease is not attached to
     * this one and stays. Never throws: a lease that cannot be revoked expires, and its key with it, within the TTL.
     */
    void release(EtcdHold hold) {
        keepAlives.stop(hold);
        deletions.forget(hold);
        if (hold.leaseId == 0) {
            return;
        }
        boolean interrupted = Thread.interrupted();
        try {
            // repeatable: a revoke sent again after the first landed finds no lease, which is what it wanted
            Requests.retrying(() -> revokes.apply(hold.leaseId), registry.requestTimeout.toNanos());
        } catch (InterruptedException e) {
            interrupted = true;
            revokeWithoutWaiting(hold); // the attempt waited for was cancelled, perhaps before it was sent
        } catch (TimeoutException e) {
            revokeWithoutWaiting(hold);
        } catch (ExecutionException e) {
            if (!KeepAlives.leaseNotFound(e)) {
                warnNotRevoked(hold, e.getCause());
            }
        } catch (RuntimeException e) {
            warnNotRevoked(hold, e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Revokes the hold's etcd lease without waiting, ahead of its release: an election term that ended, so that the
     * next participant takes over at once even while the task ignores its interrupt and the release waits for it.
     * The release revokes again, and finds no lease.
     */
    void revokeAhead(EtcdHold hold) {
        if (hold.leaseId != 0) {
            revokeWithoutWaiting(hold);
        }
    }

    /** One more revoke that nothing waits for or cancels: jetcd retries it while the release goes on. */
    private void revokeWithoutWaiting(EtcdHold hold) {
        registry.client.getLeaseClient().revoke(hold.leaseId).whenComplete((ok, failure) -> {
            if (failure != null && !KeepAlives.leaseNotFound(failure)) {
                warnNotRevoked(hold, failure);
            }
        });
    }

    private void warnNotRevoked(EtcdHold hold, Throwable failure) {
        LOG.warn(
                "could not revoke etcd lease {} of {} (its key {}): {}; etcd deletes both when the lease expires,"
                        + " within {} s",
                Long.toHexString(hold.leaseId),
                hold.path,
                hold.key,
                String.valueOf(failure),
                registry.ttlSeconds);
    }
}
