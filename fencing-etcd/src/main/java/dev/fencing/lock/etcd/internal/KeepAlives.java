package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the holds' etcd leases alive, each with a single keep-alive every third of its TTL, on one thread.
 *
 * <p>Not jetcd's streaming {@code keepAlive}: its answers do not say when the request they answer was sent, and
 * a deadline counted from an answer's arrival would come after the server's own expiry by the answer's time in
 * flight. A single keep-alive's send time is known here, and the server renewed the lease after it.
 */
final class KeepAlives {
    private static final Logger LOG = LoggerFactory.getLogger(KeepAlives.class);

    private final EtcdLockRegistry registry;
    private final ScheduledExecutorService scheduler;
    private final long periodMillis;
    private final long periodNanos;

    KeepAlives(EtcdLockRegistry registry, ScheduledExecutorService scheduler) {
        this.registry = registry;
        this.scheduler = scheduler;
        this.periodMillis = Math.max(100, TimeUnit.SECONDS.toMillis(registry.ttlSeconds) / 3);
        this.periodNanos = TimeUnit.MILLISECONDS.toNanos(periodMillis);
    }

    long periodNanos() {
        return periodNanos;
    }

    void start(EtcdHold hold) {
        try {
            hold.keepAlive = scheduler.scheduleWithFixedDelay(
                    () -> send(hold), periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            // the locks are closed: the hold is marked, and its lease expires
        }
    }

    void stop(EtcdHold hold) {
        ScheduledFuture<?> task = hold.keepAlive;
        if (task != null) {
            task.cancel(false);
        }
    }

    /** Runs {@code task} on the keep-alive thread after a period, unless the locks are closed. */
    void later(Runnable task) {
        try {
            scheduler.schedule(task, periodMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            // nothing to do any more
        }
    }

    /** Runs {@code task} on the keep-alive thread after {@code delayNanos}, unless the locks are closed. */
    void after(Runnable task, long delayNanos) {
        try {
            scheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            // nothing to do any more
        }
    }

    /** Runs {@code task} on the keep-alive thread at once; on a pool thread if the locks are closed. */
    void now(Runnable task) {
        try {
            scheduler.execute(task);
        } catch (RejectedExecutionException closed) {
            CompletableFuture.runAsync(task);
        }
    }

    private void send(EtcdHold hold) {
        if (hold.loss() != null) {
            stop(hold); // an invalid hold stays invalid: let its lease expire if its owner forgets to close it
            return;
        }
        long now = System.nanoTime();
        if (hold.deadlinePassed()) {
            // checks find this too; this tells the listener, and ends a leader's term, without one
            registry.lostLater(hold, LeaseLoss.SESSION_LOST);
            return;
        }
        if (!hold.keepAliveInFlight.compareAndSet(false, true) && now - hold.sentAtNanos < periodNanos) {
            return; // the last one is still in flight: a server that does not answer gets no pile of them
        }
        // one unanswered for a period is given up and another sent: a request stuck on a member that died
        // (jetcd fails over only for new requests) must not hold the lease's renewal up until the deadline
        hold.sentAtNanos = now;
        long wall = System.currentTimeMillis();
        registry.client
                .getLeaseClient()
                .keepAliveOnce(hold.leaseId)
                .orTimeout(periodNanos, TimeUnit.NANOSECONDS)
                .whenComplete((response, failure) -> answered(hold, now, wall, response, failure));
    }

    private void answered(
            EtcdHold hold,
            long sentAtNanos,
            long sentAtWallMillis,
            LeaseKeepAliveResponse response,
            Throwable failure) {
        if (hold.sentAtNanos == sentAtNanos) {
            hold.keepAliveInFlight.set(false);
        }
        if (failure != null) {
            if (leaseNotFound(failure)) {
                registry.lostLater(hold, LeaseLoss.SESSION_LOST);
            } else {
                LOG.debug("keep-alive of lock key {} failed: {}", hold.key, failure.toString());
            }
            return;
        }
        if (response.getTTL() <= 0) {
            // the server no longer knows the lease: it expired or was revoked, and the key went with it
            registry.lostLater(hold, LeaseLoss.SESSION_LOST);
            return;
        }
        hold.aliveUntil(sentAtNanos, sentAtWallMillis, response.getTTL());
    }

    /** etcd answers a keep-alive of an unknown lease with gRPC's NOT_FOUND ("requested lease not found"). */
    static boolean leaseNotFound(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
            if (message.contains("lease not found") || message.contains("not_found")) {
                return true;
            }
        }
        return false;
    }

    void close() {
        scheduler.shutdownNow();
    }
}
