package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.grpc.Context;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;
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
    /** Sends one keep-alive of an etcd lease; a test hook replaces it. */
    private volatile LongFunction<CompletableFuture<LeaseKeepAliveResponse>> sends;

    KeepAlives(EtcdLockRegistry registry, ScheduledExecutorService scheduler) {
        this.registry = registry;
        this.scheduler = scheduler;
        this.periodMillis = Math.max(100, TimeUnit.SECONDS.toMillis(registry.ttlSeconds) / 3);
        this.periodNanos = TimeUnit.MILLISECONDS.toNanos(periodMillis);
        this.sends = leaseId -> keepAliveOnce(registry.client, leaseId);
    }

    /** Test hook: sends the holds' periodic keep-alives (not the one before a late grant). */
    void sendsForTest(LongFunction<CompletableFuture<LeaseKeepAliveResponse>> sends) {
        this.sends = Objects.requireNonNull(sends);
    }

    long periodNanos() {
        return periodNanos;
    }

    void start(EtcdHold hold) {
        try {
            hold.keepAlive = scheduler.scheduleWithFixedDelay(
                    () -> sendOrEnd(hold), periodMillis, periodMillis, TimeUnit.MILLISECONDS);
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

    /**
     * A periodic task that throws is never run again, silently: the hold's etcd lease would then expire on the
     * server while the hold reads valid here until a check finds its deadline passed, and nothing would tell the
     * listener. A keep-alive that cannot be sent ends the hold at once instead.
     */
    private void sendOrEnd(EtcdHold hold) {
        try {
            send(hold);
        } catch (RuntimeException | Error e) {
            LOG.warn("could not send a keep-alive of lock key {} ({}); its lease ends", hold.key, e.toString());
            registry.lostLater(hold, LeaseLoss.SESSION_LOST);
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
        sends.apply(hold.leaseId)
                .orTimeout(periodNanos, TimeUnit.NANOSECONDS)
                .whenComplete((response, failure) -> answered(hold, now, wall, response, failure));
    }

    /**
     * jetcd's {@code keepAliveOnce}, whose gRPC stream is cancelled when the future returned here completes before
     * the answer (it timed out, or was cancelled). jetcd ends a keep-alive's stream only once an answer or an error
     * arrives: a keep-alive given up on while the server stays silent (a frozen member, a link that loses
     * its answers) would stay open until the connection dies, one more stream each time one is given up on.
     */
    static CompletableFuture<LeaseKeepAliveResponse> keepAliveOnce(Client client, long leaseId) {
        // jetcd starts the call on this thread, and gRPC binds a call to the context current when it starts; a
        // context of its own, not the caller's, so that nothing but this cancels it and nothing is left to release
        Context.CancellableContext call = Context.ROOT.withCancellation();
        CompletableFuture<LeaseKeepAliveResponse> sent;
        Context previous = call.attach();
        try {
            sent = client.getLeaseClient().keepAliveOnce(leaseId);
        } finally {
            call.detach(previous);
        }
        CompletableFuture<LeaseKeepAliveResponse> answer = sent.copy();
        answer.whenComplete((response, failure) -> {
            if (!sent.isDone()) {
                call.cancel(null);
            }
        });
        return answer;
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
