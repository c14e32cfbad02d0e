package dev.fencing.lock.etcd.internal;

import static dev.fencing.lock.etcd.internal.EtcdTesting.bytes;
import static dev.fencing.lock.etcd.internal.EtcdTesting.client;
import static dev.fencing.lock.etcd.internal.EtcdTesting.keysUnder;
import static dev.fencing.lock.etcd.internal.EtcdTesting.registry;
import static dev.fencing.lock.etcd.internal.EtcdTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** The lock on one real etcd member: exclusion, token order, the waiters' queue, timeouts and re-entry. */
class EtcdLockIT {
    private static final Duration TTL = Duration.ofSeconds(5);

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private String prefix;
    private Client outsider;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/lock/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
        outsider = client();
    }

    @AfterEach
    void stop() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private Client client() {
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        return client;
    }

    private EtcdLockRegistry registry(Client client) {
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, TTL);
        opened.add(registry);
        return registry;
    }

    @Test
    void threadsOfThreeClientsNeverHoldTheLockTogetherAndEachGrantHasAGreaterToken() throws Exception {
        int clients = 3;
        int threadsPerClient = 2;
        int rounds = 8;
        AtomicInteger inside = new AtomicInteger();
        List<Long> grants = Collections.synchronizedList(new ArrayList<>());
        List<String> overlaps = new CopyOnWriteArrayList<>();
        List<Future<?>> workers = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            FencedLock lock = registry(client()).lock("shared");
            for (int t = 0; t < threadsPerClient; t++) {
                workers.add(threads.submit(() -> {
                    for (int r = 0; r < rounds; r++) {
                        try (Lease lease = lock.acquire()) {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.add("token " + lease.token());
                            }
                            grants.add(lease.token());
                            Thread.sleep(2);
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
        }
        for (Future<?> worker : workers) {
            worker.get(90, TimeUnit.SECONDS);
        }

        assertThat(overlaps).isEmpty();
        assertThat(grants).hasSize(clients * threadsPerClient * rounds);
        // recorded inside the lock, so in grant order
        for (int i = 1; i < grants.size(); i++) {
            assertThat(grants.get(i))
                    .as("grant %d after %s", i, grants.get(i - 1))
                    .isGreaterThan(grants.get(i - 1));
        }
        assertThat(keysUnder(outsider, prefix)).isEmpty();
    }

    @Test
    void waitersAreGrantedInTheOrderOfTheirKeysCreateRevisionsAndEachWatchesOnlyItsPredecessor() throws Exception {
        EtcdLockRegistry registry = registry(client());
        Map<String, List<String>> watched = new ConcurrentHashMap<>();
        registry.predecessorWatched(
                (waiter, predecessor) -> watched.computeIfAbsent(waiter, k -> new CopyOnWriteArrayList<>())
                        .add(predecessor));
        FencedLock lock = registry.lock("queue");
        Lease first = lock.acquire();
        List<Long> grantOrder = new CopyOnWriteArrayList<>();
        List<Future<?>> waiters = new ArrayList<>();
        int count = 5;
        for (int i = 0; i < count; i++) {
            int before = watched.size();
            waiters.add(threads.submit(() -> {
                try (Lease lease = lock.acquire()) {
                    grantOrder.add(lease.token());
                }
                return null;
            }));
            // one waiter at a time, so that the order of creation is known
            await().atMost(Duration.ofSeconds(10)).until(() -> watched.size() == before + 1);
        }
        List<KeyValue> queued = keysUnder(outsider, prefix);

        first.close();
        for (Future<?> waiter : waiters) {
            waiter.get(30, TimeUnit.SECONDS);
        }

        assertThat(queued).hasSize(count + 1);
        List<Long> revisions = queued.stream().map(KeyValue::getCreateRevision).toList();
        assertThat(grantOrder).containsExactlyElementsOf(revisions.subList(1, count + 1));
        for (int i = 1; i <= count; i++) {
            String waiter = text(queued.get(i).getKey());
            assertThat(watched.get(waiter))
                    .as("keys watched by the waiter of revision %d", revisions.get(i))
                    .containsExactly(text(queued.get(i - 1).getKey()));
        }
    }

    @Test
    void aTimedOutAcquireDeletesItsKeyAndTheHolderKeepsTheLock() throws Exception {
        EtcdLockRegistry registry = registry(client());
        List<String> waiterKeys = new CopyOnWriteArrayList<>();
        registry.predecessorWatched((waiter, predecessor) -> waiterKeys.add(waiter));
        FencedLock lock = registry.lock("timeout");
        Lease held = lock.acquire();

        Optional<Lease> late =
                threads.submit(() -> lock.tryAcquire(Duration.ofMillis(700))).get(30, TimeUnit.SECONDS);

        assertThat(late).isEmpty();
        assertThat(waiterKeys).hasSize(1);
        assertThat(keysUnder(outsider, prefix))
                .extracting(kv -> text(kv.getKey()))
                .doesNotContain(waiterKeys.get(0))
                .hasSize(1);
        assertThat(held.isValid()).isTrue();
        held.close();
        assertThat(keysUnder(outsider, prefix)).isEmpty();
    }

    /**
     * A nanosecond is one attempt, as with Curator: the contending requests are made whatever the timeout, so a
     * free lock is granted and a held one is not, and the attempt leaves no key behind.
     */
    @Test
    void aOneNanosecondAttemptIsGrantedAFreeLockAndRefusedAHeldOneWithoutLeavingItsKey() throws Exception {
        EtcdLockRegistry registry = registry(client());
        FencedLock lock = registry.lock("one-attempt");

        Optional<Lease> free = lock.tryAcquire(Duration.ofNanos(1));
        assertThat(free).as("an attempt at a free lock").isPresent();
        Optional<Lease> held =
                threads.submit(() -> lock.tryAcquire(Duration.ofNanos(1))).get(30, TimeUnit.SECONDS);

        assertThat(held).as("an attempt at a held lock").isEmpty();
        assertThat(keysUnder(outsider, prefix)).hasSize(1);
        assertThat(free.get().isValid()).isTrue();
        free.get().close();
        assertThat(keysUnder(outsider, prefix)).isEmpty();
    }

    @Test
    void aThreadThatAcquiresALockItHoldsGetsTheSameTokenAndKeepsTheLockUntilItsLastLeaseCloses() throws Exception {
        FencedLock lock = registry(client()).lock("reentry");
        FencedLock other = registry(client()).lock("reentry");
        Lease outer = lock.acquire();
        Lease inner = lock.acquire();

        assertThat(inner.token()).isEqualTo(outer.token());
        inner.close();
        assertThat(inner.isValid()).isFalse();
        assertThat(inner.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        assertThat(outer.isValid()).isTrue();
        assertThat(threads.submit(() -> other.tryAcquire(Duration.ofMillis(500)))
                        .get(30, TimeUnit.SECONDS))
                .isEmpty();
        assertThatThrownBy(() -> threads.submit(outer::close).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(IllegalStateException.class)
                .hasMessageContaining(Thread.currentThread().getName());

        outer.close();
        outer.close();

        assertThat(outer.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        assertThatThrownBy(outer::ensureValid).isInstanceOf(LeaseLostException.class);
        Lease next = threads.submit(() -> {
                    Lease lease = other.acquire();
                    lease.close();
                    return lease;
                })
                .get(30, TimeUnit.SECONDS);
        assertThat(next.token()).isGreaterThan(outer.token());
    }

    @Test
    void verifyReadsTheKeyFromTheServer() throws Exception {
        FencedLock lock = registry(client()).lock("verify");
        Lease lease = lock.acquire();
        registry(client()); // a second registry, so the shared server has more than one client

        assertThat(lease.verify()).isTrue();
        List<KeyValue> keys = keysUnder(outsider, prefix);
        assertThat(keys).hasSize(1);
        assertThat(keys.get(0).getCreateRevision()).isEqualTo(lease.token());
        outsider.getKVClient().delete(keys.get(0).getKey()).get(10, TimeUnit.SECONDS);

        assertThat(lease.verify()).isFalse();
        assertThat(lease.isValid()).isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
    }

    @Test
    void closingTheLocksInvalidatesHeldLeasesAndFailsWaitingAcquires() throws Exception {
        EtcdLockRegistry registry = registry(client());
        CountDownLatch waiting = new CountDownLatch(1);
        registry.predecessorWatched((waiter, predecessor) -> waiting.countDown());
        FencedLock lock = registry.lock("close");
        Lease held = lock.acquire();
        Future<Lease> waiter = threads.submit(() -> lock.acquire());
        assertThat(waiting.await(10, TimeUnit.SECONDS)).isTrue();

        registry.close();

        assertThat(held.isValid()).isFalse();
        assertThat(held.lossCause()).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        assertThatThrownBy(() -> waiter.get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        held.close();
        assertThat(held.lossCause()).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> keysUnder(outsider, prefix).isEmpty());
        assertThatThrownBy(() -> registry.lock("close")).isInstanceOf(IllegalStateException.class);
    }

    /**
     * The locks close while an acquire takes up its grant: the lease it hands out reads closed, and the listener is
     * told of it on the listener's thread, never on the acquiring one, inside its acquire (a listener that waits for
     * the holder to stop would wait for itself).
     */
    @Test
    void aGrantTakenUpAsTheLocksCloseIsToldOfOnTheListenersThreadNotTheAcquirers() throws Exception {
        List<Thread> toldOn = new CopyOnWriteArrayList<>();
        EtcdLockRegistry registry = EtcdTesting.registry(client(), prefix, TTL, new FencedLockListener() {
            @Override
            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                toldOn.add(Thread.currentThread());
            }
        });
        opened.add(registry);
        AtomicBoolean once = new AtomicBoolean();
        registry.beforeGranted(hold -> {
            if (once.compareAndSet(false, true)) {
                try {
                    threads.submit(registry::close).get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }
        });

        Lease lease = registry.lock("closing").acquire();

        assertThat(once).isTrue();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        await().atMost(Duration.ofSeconds(10)).until(() -> !toldOn.isEmpty());
        assertThat(toldOn).hasSize(1).doesNotContain(Thread.currentThread());
        lease.close();
    }

    /**
     * An {@link Error} (an assertion, an {@code OutOfMemoryError}) once the mutex granted a hold and before its lease
     * is handed out: with no lease, nothing would ever revoke the hold's etcd lease, which its keep-alives renew for
     * as long as the registry lives, and every other contender would wait for a key that never goes. The acquire
     * throws the error itself, and the key and its lease are gone.
     */
    @Test
    void anErrorBetweenGrantAndLeaseRevokesTheHoldsLeaseAndIsThrown() throws Exception {
        List<String> told = new CopyOnWriteArrayList<>();
        EtcdLockRegistry registry = EtcdTesting.registry(client(), prefix, TTL, new FencedLockListener() {
            @Override
            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                told.add(lease.token() + ":" + cause);
            }
        });
        opened.add(registry);
        AssertionError error = new AssertionError("between grant and lease");
        AtomicLong abandonedLease = new AtomicLong();
        AtomicBoolean once = new AtomicBoolean();
        registry.beforeGranted(hold -> {
            if (once.compareAndSet(false, true)) {
                abandonedLease.set(hold.leaseId);
                throw error;
            }
        });
        FencedLock lock = registry.lock("error");

        assertThatThrownBy(lock::acquire).isSameAs(error);

        assertThat(keysUnder(outsider, prefix)).as("the granted key is gone").isEmpty();
        assertThat(outsider.getLeaseClient()
                        .timeToLive(abandonedLease.get(), LeaseOption.DEFAULT)
                        .get(10, TimeUnit.SECONDS)
                        .getTTL())
                .as("the hold's etcd lease is revoked")
                .isEqualTo(-1);
        try (Lease again = lock.tryAcquire(Duration.ofSeconds(3)).orElseThrow()) {
            assertThat(again.isValid())
                    .as("a fresh grant, not the abandoned hold")
                    .isTrue();
        }
        registry.close();
        assertThat(told)
                .as("no abandoned hold is left for the close to invalidate")
                .isEmpty();
    }

    @Test
    void anInterruptedWaiterThrowsKeepsItsInterruptFlagAndDeletesItsKey() throws Exception {
        EtcdLockRegistry registry = registry(client());
        List<String> waiterKeys = new CopyOnWriteArrayList<>();
        registry.predecessorWatched((waiter, predecessor) -> waiterKeys.add(waiter));
        FencedLock lock = registry.lock("interrupt");
        Lease held = lock.acquire();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean flagAfter = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            try {
                lock.acquire();
            } catch (RuntimeException e) {
                thrown.set(e);
                flagAfter.set(Thread.currentThread().isInterrupted());
            }
        });
        waiter.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> waiterKeys.size() == 1);

        waiter.interrupt();
        waiter.join(10_000);

        assertThat(thrown.get()).isInstanceOf(LockInterruptedException.class);
        assertThat(flagAfter).isTrue();
        assertThat(keysUnder(outsider, prefix))
                .extracting(kv -> text(kv.getKey()))
                .doesNotContain(waiterKeys.get(0))
                .hasSize(1);
        assertThat(held.isValid()).isTrue();
        held.close();
    }

    @Test
    void anAcquireInterruptedWhileItsLeaseIsBeingGrantedRevokesTheLeaseOnceGranted() throws Exception {
        EtcdLockRegistry registry = registry(client());
        List<CompletableFuture<LeaseGrantResponse>> grants = new CopyOnWriteArrayList<>();
        registry.grantSent(grant -> {
            grants.add(grant);
            Thread.currentThread().interrupt(); // the caller gives up before etcd answers
        });

        assertThatThrownBy(() -> registry.lock("interrupted-grant").acquire())
                .isInstanceOf(LockInterruptedException.class);
        assertThat(Thread.interrupted()).isTrue();

        assertThat(grants).hasSize(1);
        long leaseId = grants.get(0).get(10, TimeUnit.SECONDS).getID(); // etcd granted it all the same
        // well within the TTL, after which etcd would drop the lease by itself
        await().atMost(TTL.dividedBy(2)).untilAsserted(() -> assertThat(outsider.getLeaseClient()
                        .timeToLive(leaseId, LeaseOption.DEFAULT)
                        .get(10, TimeUnit.SECONDS)
                        .getTTL())
                .as("TTL of the lease granted to the interrupted acquire (-1: gone)")
                .isEqualTo(-1));
        assertThat(keysUnder(outsider, prefix)).isEmpty();
    }

    /**
     * A release that gives up waiting for its revoke (interrupted here; a request timeout likewise) cancels that
     * request, which jetcd then may never send: it sends one more that nothing waits for, so the key goes at once
     * rather than when the lease expires.
     */
    @Test
    void aReleaseInterruptedWhileItWaitsForItsRevokeStillFreesTheLockAtOnce() throws Exception {
        EtcdLockRegistry registry = registry(client());
        Lease lease = registry.lock("interrupted-release").acquire();
        AtomicInteger waited = new AtomicInteger();
        registry.keys.revokesForTest(leaseId -> {
            waited.incrementAndGet();
            Thread.currentThread().interrupt(); // the caller gives up before etcd answers
            return new CompletableFuture<>(); // a revoke that is never sent
        });

        lease.close();

        assertThat(Thread.interrupted()).as("the interrupt is kept").isTrue();
        assertThat(waited).hasValue(1);
        await().atMost(TTL.dividedBy(2)).until(() -> keysUnder(outsider, prefix).isEmpty());
        assertThat(registry.lock("interrupted-release")
                        .tryAcquire(Duration.ofSeconds(2))
                        .map(next -> {
                            next.close();
                            return true;
                        }))
                .as("the lock is free for the next acquire")
                .contains(true);
    }

    /**
     * The create's other branch: the key is there already with this acquire's own lease (its create sent once
     * before and the answer lost). The acquire takes that key's revision as its token and queues behind the
     * holder; a mix-up of the branch's two reads would take the holder's key for its own and refuse it as foreign.
     */
    @Test
    void anAcquireThatFindsItsOwnKeyAlreadyCreatedQueuesBehindTheHolderAndTakesThatKeysRevision() throws Exception {
        EtcdLockRegistry holders = registry(client());
        Lease held = holders.lock("resent").acquire();
        EtcdLockRegistry registry = registry(client());
        AtomicLong plantedRevision = new AtomicLong();
        registry.grantSent(grant -> {
            try {
                long leaseId = grant.get(10, TimeUnit.SECONDS).getID();
                plantedRevision.set(outsider.getKVClient()
                        .put(
                                bytes(registry.contendersOf("resent") + Long.toHexString(leaseId)),
                                bytes("planted"),
                                PutOption.builder().withLeaseId(leaseId).build())
                        .get(10, TimeUnit.SECONDS)
                        .getHeader()
                        .getRevision());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        Future<Long> waiter = threads.submit(() -> {
            try (Lease lease = registry.lock("resent").acquire()) {
                return lease.token();
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> plantedRevision.get() > 0);
        assertThat(waiter.isDone()).as("granted while another holds the lock").isFalse();
        held.close();

        assertThat(waiter.get(10, TimeUnit.SECONDS))
                .isEqualTo(plantedRevision.get())
                .isGreaterThan(held.token());
    }

    @Test
    void anAcquireThatFindsItsKeyWrittenWithoutItsLeaseFailsAndLeavesTheKeyAlone() throws Exception {
        EtcdLockRegistry registry = registry(client());
        AtomicReference<String> planted = new AtomicReference<>();
        AtomicLong ourLease = new AtomicLong();
        registry.grantSent(grant -> {
            try {
                // before the acquire creates its key, something else writes one under the name it will use
                long leaseId = grant.get(10, TimeUnit.SECONDS).getID();
                ourLease.set(leaseId);
                planted.set(registry.contendersOf("foreign") + Long.toHexString(leaseId));
                outsider.getKVClient()
                        .put(bytes(planted.get()), bytes("not a lock's"))
                        .get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        assertThatThrownBy(() -> registry.lock("foreign").acquire())
                .isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining(planted.get())
                .hasMessageContaining("exists with no etcd lease");

        assertThat(keysUnder(outsider, prefix))
                .extracting(kv -> text(kv.getKey()), kv -> text(kv.getValue()))
                .containsExactly(tuple(planted.get(), "not a lock's"));
        await().atMost(TTL.dividedBy(2)).untilAsserted(() -> assertThat(outsider.getLeaseClient()
                        .timeToLive(ourLease.get(), LeaseOption.DEFAULT)
                        .get(10, TimeUnit.SECONDS)
                        .getTTL())
                .isEqualTo(-1));
    }

    /**
     * Compaction drops history, not live keys: a waiter queued across a compaction (its watch may start from a
     * compacted revision and fail) is still granted in order, and the tokens keep rising.
     */
    @Test
    void tokensKeepRisingAcrossACompactionAndAWaiterQueuedAcrossItIsGranted() throws Exception {
        EtcdLockRegistry registry = registry(client());
        CountDownLatch queued = new CountDownLatch(1);
        registry.predecessorWatched((waiter, predecessor) -> queued.countDown());
        FencedLock lock = registry.lock("compaction");
        Lease first = lock.acquire();
        Future<Lease> waiter = threads.submit(() -> {
            Lease lease = lock.acquire();
            lease.close();
            return lease;
        });
        assertThat(queued.await(10, TimeUnit.SECONDS)).isTrue();
        for (int i = 0; i < 5; i++) {
            outsider.getKVClient().put(bytes(prefix + "-noise"), bytes("v" + i)).get(10, TimeUnit.SECONDS);
        }
        long revision = outsider.getKVClient()
                .get(bytes(prefix + "-noise"))
                .get(10, TimeUnit.SECONDS)
                .getHeader()
                .getRevision();

        outsider.getKVClient().compact(revision).get(10, TimeUnit.SECONDS);
        first.close();

        Lease second = waiter.get(10, TimeUnit.SECONDS);
        Lease third = lock.acquire();
        third.close();
        assertThat(second.token()).isGreaterThan(first.token());
        assertThat(third.token()).isGreaterThan(second.token()).isGreaterThan(revision);
    }

    /** Keys of the outsider's doing, for tests that delete or revoke. */
    static long leaseIdOf(KeyValue kv) {
        String key = text(kv.getKey());
        return Long.parseUnsignedLong(key.substring(key.lastIndexOf('/') + 1), 16);
    }

    static void delete(Client client, KeyValue kv) throws Exception {
        client.getKVClient().delete(bytes(text(kv.getKey()))).get(10, TimeUnit.SECONDS);
    }
}
