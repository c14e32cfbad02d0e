package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * etcd's {@code concurrency.Mutex} recipe for one hold: grant an etcd lease, create {@code
 * <prefix>/<name>/<lease id in hex>} with it in a transaction that creates it only if absent (a retried request
 * finds its key) and reads the first contender, take the key's create revision as the token, and, unless that
 * first contender is the own key, wait until no contender key has a smaller
 * create revision, each waiter watching only the deletion of its immediate predecessor (no herd) and reading
 * again when it goes.
 */
final class KeyMutex {
    private static final Logger LOG = LoggerFactory.getLogger(KeyMutex.class);

    enum Outcome {
        GRANTED,
        TIMED_OUT,
        /** The hold was marked while it waited: its lease, its key or this JVM's timing can no longer be trusted. */
        LOST
    }

    /** The contender key with the smallest create revision: the holder, or the next to be granted. */
    static final GetOption FIRST = GetOption.builder()
            .isPrefix(true)
            .withSortField(GetOption.SortTarget.CREATE)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .withLimit(1)
            .build();

    private final EtcdLockRegistry registry;
    private final long recheckNanos;

    KeyMutex(EtcdLockRegistry registry) {
        this.registry = registry;
        // a watch that never delivers (it should not) costs at most this much waiting
        this.recheckNanos = TimeUnit.SECONDS.toNanos(registry.ttlSeconds);
    }

    /**
     * Contends with {@code hold} until granted, the deadline ({@code null}: none) passes, or the hold is marked.
     * Whatever is left of an attempt that returns without a grant or throws is the caller's to discard.
     */
    Outcome acquire(EtcdHold hold, Long deadlineNanos) {
        AtomicLong grantSent = new AtomicLong();
        AtomicLong grantSentWall = new AtomicLong();
        Grants grants = new Grants(hold);
        LeaseGrantResponse grant;
        try {
            grant = await(
                    () -> {
                        grantSent.set(System.nanoTime()); // the attempt that is answered counts
                        grantSentWall.set(System.currentTimeMillis());
                        CompletableFuture<LeaseGrantResponse> sent =
                                registry.client.getLeaseClient().grant(registry.ttlSeconds);
                        registry.grantSent(sent);
                        return grants.track(sent);
                    },
                    hold,
                    "grant a lease");
        } catch (RuntimeException e) {
            grants.abandon();
            throw e;
        }
        grants.take(grant.getID());
        hold.leased(grant.getID(), registry.contendersOf(hold.name) + Long.toHexString(grant.getID()));
        registry.keys.track(hold);
        registry.leaseGranted(hold, grantSent.get(), grantSentWall.get(), grant.getTTL());

        ByteSequence key = hold.keyBytes;
        ByteSequence contenders = ByteSequence.from(registry.contendersOf(hold.name), StandardCharsets.UTF_8);
        // the first contender is read in the same transaction, after the put (a transaction's reads see its own
        // writes), as etcd's concurrency.Mutex does: an acquire that finds itself first needs no second read
        TxnResponse created = await(
                () -> registry.client
                        .getKVClient()
                        .txn()
                        .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                        .Then(
                                Op.put(
                                        key,
                                        hold.value,
                                        PutOption.builder()
                                                .withLeaseId(grant.getID())
                                                .build()),
                                Op.get(contenders, FIRST))
                        .Else(Op.get(key, GetOption.DEFAULT), Op.get(contenders, FIRST))
                        .commit(),
                hold,
                "create its key");
        long revision;
        List<KeyValue> first;
        if (created.isSucceeded()) {
            revision = created.getHeader().getRevision();
            first = created.getGetResponses().get(0).getKvs();
        } else {
            // the key was there: this acquire's own create, sent again after its answer was lost, or a key
            // something else wrote under the lock's prefix with this lease's name; only the first is this hold's
            KeyValue found = created.getGetResponses().get(0).getKvs().get(0);
            if (found.getLease() != grant.getID()) {
                throw new LockAcquisitionException(
                        "could not acquire lock " + hold.path + ": its key " + hold.key + " exists with "
                                + (found.getLease() == 0
                                        ? "no etcd lease"
                                        : "etcd lease " + Long.toHexString(found.getLease()))
                                + ", not with lease " + Long.toHexString(grant.getID())
                                + ", the one it is named after; something other than this lock writes under "
                                + registry.contendersOf(hold.name) + ". The key is left as it is",
                        hold.path,
                        null);
            }
            revision = found.getCreateRevision();
            first = created.getGetResponses().get(1).getKvs();
        }
        hold.token = revision;
        registry.keys.watch(hold);
        // at the transaction's revision the own key existed with this revision: first then, it is granted without
        // another read (a deletion since is reported by the watch from revision + 1, and checked by the grant's
        // renewal when the deadline is near)
        boolean firstAlready = !first.isEmpty() && first.get(0).getCreateRevision() == revision;

        GetOption predecessor = GetOption.builder()
                .isPrefix(true)
                .withMaxCreateRevision(revision - 1)
                .withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.DESCEND)
                .withLimit(1)
                .build();
        while (true) {
            CountDownLatch wakeUp = new CountDownLatch(1);
            hold.wakeUp = wakeUp;
            if (hold.loss() != null) {
                return Outcome.LOST; // read after the latch is in place: a mark from now on counts it down
            }
            if (firstAlready) {
                return registry.keys.renewBeforeGrant(hold) ? Outcome.GRANTED : Outcome.LOST;
            }
            // one read, and only while the own key still exists as it was created (its mod revision is its create
            // revision): a waiter whose key was deleted (its lease revoked or expired) must not find itself first
            // and be granted without a key, nor one whose key another client wrote, which took it off this lease
            TxnResponse ranked = await(
                    () -> registry.client
                            .getKVClient()
                            .txn()
                            .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(revision)))
                            .Then(Op.get(contenders, predecessor))
                            .commit(),
                    hold,
                    "read its predecessor");
            if (!ranked.isSucceeded()) {
                registry.lostLater(hold, LeaseLoss.NODE_GONE);
                return Outcome.LOST;
            }
            List<KeyValue> before = ranked.getGetResponses().get(0).getKvs();
            if (before.isEmpty()) {
                return registry.keys.renewBeforeGrant(hold) ? Outcome.GRANTED : Outcome.LOST;
            }
            if (deadlineNanos != null && deadlineNanos - System.nanoTime() <= 0) {
                return Outcome.TIMED_OUT; // one attempt made, a holder before it: no watch to open
            }
            ByteSequence previous = before.get(0).getKey();
            registry.watchingPredecessor(hold, previous.toString(StandardCharsets.UTF_8));
            WatchOption deletion = WatchOption.builder()
                    .withRevision(ranked.getHeader().getRevision() + 1)
                    .withNoPut(true)
                    .build();
            Watch.Watcher watcher = registry.client
                    .getWatchClient()
                    .watch(
                            previous,
                            deletion,
                            response -> {
                                for (WatchEvent event : response.getEvents()) {
                                    if (event.getEventType() == WatchEvent.EventType.DELETE) {
                                        wakeUp.countDown();
                                    }
                                }
                            },
                            failure -> wakeUp.countDown(), // read again: a compacted revision, a closed client
                            wakeUp::countDown);
            try {
                if (!wait(wakeUp, hold, deadlineNanos)) {
                    return Outcome.TIMED_OUT;
                }
            } finally {
                watcher.close();
            }
        }
    }

    /**
     * The etcd leases granted for one acquire's grant requests. A request the acquire gave up on (interrupted,
     * timed out, sent again) may still be granted on the server: every lease granted but not taken is revoked
     * when its answer arrives, or when the acquire gives up, whichever comes second, so that it does not live on
     * for a TTL.
     */
    private final class Grants {
        private final EtcdHold hold;
        private final List<Long> untaken = new ArrayList<>();
        private long taken;
        private boolean abandoned;

        Grants(EtcdHold hold) {
            this.hold = hold;
        }

        /** What the acquire waits on: a copy, so that giving up on it does not cancel the answer seen here. */
        CompletableFuture<LeaseGrantResponse> track(CompletableFuture<LeaseGrantResponse> sent) {
            sent.thenAccept(granted -> answered(granted.getID()));
            return sent.copy();
        }

        private void answered(long leaseId) {
            synchronized (this) {
                if (!abandoned && (taken == 0 || taken == leaseId)) {
                    if (taken == 0) {
                        untaken.add(leaseId);
                    }
                    return;
                }
            }
            revoke(leaseId);
        }

        void take(long leaseId) {
            List<Long> others;
            synchronized (this) {
                taken = leaseId;
                untaken.remove(Long.valueOf(leaseId));
                others = List.copyOf(untaken);
                untaken.clear();
            }
            others.forEach(this::revoke);
        }

        void abandon() {
            List<Long> granted;
            synchronized (this) {
                abandoned = true;
                granted = List.copyOf(untaken);
                untaken.clear();
            }
            granted.forEach(this::revoke);
        }

        private void revoke(long leaseId) {
            registry.client.getLeaseClient().revoke(leaseId).whenComplete((ok, failure) -> {
                if (failure != null) {
                    LOG.debug(
                            "revoke of etcd lease {} granted to an abandoned attempt on {} failed: {}",
                            Long.toHexString(leaseId),
                            hold.path,
                            failure.toString());
                }
            });
        }
    }

    /** False when the deadline passed first. */
    private boolean wait(CountDownLatch wakeUp, EtcdHold hold, Long deadlineNanos) {
        try {
            if (deadlineNanos == null) {
                wakeUp.await(recheckNanos, TimeUnit.NANOSECONDS);
                return true;
            }
            long remaining = deadlineNanos - System.nanoTime();
            if (remaining <= 0) {
                return false;
            }
            if (!wakeUp.await(Math.min(remaining, recheckNanos), TimeUnit.NANOSECONDS)) {
                return deadlineNanos - System.nanoTime() > 0;
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(hold.path, e);
        }
    }

    /**
     * The answer to one request, waiting at most the request timeout. The acquire's deadline bounds its wait for
     * the contenders before it, not the requests that contend: an acquire always makes one attempt (its lease, its
     * key, the read of its predecessor), as Curator's recipe does, so that a timeout shorter than etcd's answers
     * (a caller's one attempt, a nanosecond) can still be granted a free lock.
     */
    private <T> T await(Supplier<CompletableFuture<T>> request, EtcdHold hold, String what) {
        long wait = registry.requestTimeout.toNanos();
        try {
            return Requests.retrying(request, wait);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(hold.path, e);
        } catch (TimeoutException e) {
            throw new LockAcquisitionException(
                    "could not acquire lock " + hold.path + ": etcd did not answer within "
                            + registry.requestTimeout.toMillis() + " ms when asked to " + what,
                    hold.path,
                    e);
        } catch (ExecutionException e) {
            throw new LockAcquisitionException(
                    "could not acquire lock " + hold.path + ": etcd failed when asked to " + what + ": " + e.getCause(),
                    hold.path,
                    e.getCause());
        }
    }
}
