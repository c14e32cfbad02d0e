package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.ForeignLockParentException;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.listen.Listenable;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** The registry's own promises, some through its test hook between a grant and its registration. */
class LockRegistryIT {
    private final List<AutoCloseable> opened = new ArrayList<>();
    private EmbeddedZooKeeper zk;
    private String path;

    record Invalidation(long token, LeaseLoss cause) {}

    static final class RecordingListener implements FencedLockListener {
        final List<Invalidation> invalidations = new CopyOnWriteArrayList<>();

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            invalidations.add(new Invalidation(lease.token(), cause));
        }
    }

    @BeforeEach
    void start(TestInfo test) {
        zk = EmbeddedZooKeeper.builder().build();
        path = "/it/registry/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        zk.close();
    }

    @Test
    void aSessionLostBetweenGrantAndRegistrationLeavesTheLeaseInvalidWhileTheNextHolderHasTheLock() {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, new RecordingListener());
        FencedLock next = registry(client(), new RecordingListener()).lock(path, TokenSource.SEQUENCE);
        AtomicReference<Lease> successor = new AtomicReference<>();
        AtomicBoolean lost = new AtomicBoolean();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.LOST) {
                lost.set(true);
            }
        });
        registry.beforeRegistering(Hooks.once(() -> {
            // the holder "freezes" here: its session expires and another client takes the lock
            ZooKeeper handle = zooKeeper(client);
            ZooKeeperSessions.expire(zk.connectString(), handle.getSessionId(), handle.getSessionPasswd());
            await().atMost(Duration.ofSeconds(20)).untilTrue(lost);
            successor.set(next.tryAcquire(Duration.ofSeconds(20)).orElseThrow());
        }));

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        assertThat(successor.get().token()).isEqualTo(lease.token() + 1);
        assertThat(successor.get().verify()).isTrue();
        assertThat(lease.isValid()).as("a lease whose node is gone").isFalse();
        assertThat(lease.lossCause()).isIn(LeaseLoss.CONNECTION_SUSPENDED, LeaseLoss.SESSION_LOST);
        lease.close();
        successor.get().close();
    }

    @Test
    void aSuspensionBetweenGrantAndRegistrationInvalidatesTheLeaseEvenThoughTheSessionSurvived() {
        CuratorFramework client = client();
        RecordingListener listener = new RecordingListener();
        // the server's stop and restart take seconds on a loaded machine: no pause of the test's own threads
        // (the detector's, starved of CPU meanwhile) may count here, only the suspension
        LockRegistry registry = new LockRegistry(
                client, null, Duration.ofSeconds(30), listener, FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        AtomicBoolean suspended = new AtomicBoolean();
        AtomicBoolean reconnected = new AtomicBoolean();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED) {
                suspended.set(true);
            } else if (state == ConnectionState.RECONNECTED) {
                reconnected.set(true);
            }
        });
        AtomicReference<Long> sessionBefore = new AtomicReference<>();
        registry.beforeRegistering(Hooks.once(() -> {
            sessionBefore.set(zooKeeper(client).getSessionId());
            zk.stop();
            await().atMost(Duration.ofSeconds(20)).untilTrue(suspended);
            zk.restart();
            await().atMost(Duration.ofSeconds(30)).untilTrue(reconnected);
        }));

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        assertThat(zooKeeper(client).getSessionId())
                .as("same session: only the suspension can tell")
                .isEqualTo(sessionBefore.get());
        assertThat(lease.isValid()).isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        await().atMost(Duration.ofSeconds(10)) // told on the listener's thread
                .untilAsserted(() -> assertThat(listener.invalidations)
                        .containsExactly(new Invalidation(lease.token(), LeaseLoss.CONNECTION_SUSPENDED)));
        lease.close();
    }

    /**
     * Curator reports a lost session on its own event thread, after the client may already run a new
     * session. A grant registered in between, with no event counted yet, is checked against the owner
     * of its node as the create response named it, and comes out invalid without waiting for the event.
     */
    @Test
    void aGrantWhoseSessionWasReplacedBeforeCuratorReportedTheLossIsInvalidAtOnce() {
        CuratorFramework client = client();
        RecordingListener listener = new RecordingListener();
        LockRegistry registry = new LockRegistry(
                heldBackConnectionEvents(client),
                null,
                Duration.ofSeconds(30), // no pause of the test's own threads may count here
                listener,
                FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        FencedLock next = registry(client(), new RecordingListener()).lock(path, TokenSource.SEQUENCE);
        AtomicReference<Lease> successor = new AtomicReference<>();
        registry.beforeRegistering(Hooks.once(() -> {
            // the holder "freezes" here: its session expires, the client opens a new one, another
            // client takes the lock, and Curator has not told the registry yet
            ZooKeeper handle = zooKeeper(client);
            long expired = handle.getSessionId();
            ZooKeeperSessions.expire(zk.connectString(), expired, handle.getSessionPasswd());
            await().atMost(Duration.ofSeconds(20)).until(() -> {
                long now = zooKeeper(client).getSessionId();
                return now != 0 && now != expired && client.getZookeeperClient().isConnected();
            });
            successor.set(next.tryAcquire(Duration.ofSeconds(20)).orElseThrow());
        }));

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        assertThat(successor.get().token()).isEqualTo(lease.token() + 1);
        assertThat(lease.isValid())
                .as("a lease whose node went with its session")
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
        await().atMost(Duration.ofSeconds(10)) // told on the listener's thread
                .untilAsserted(() -> assertThat(listener.invalidations)
                        .containsExactly(new Invalidation(lease.token(), LeaseLoss.SESSION_LOST)));
        lease.close();
        successor.get().close();
    }

    /**
     * A listener that blocks on its first call (a synchronous alert, a remote log call) must not keep
     * the other leases of a lost session valid while another client holds their locks with greater
     * tokens: the review measured one of two leases still valid 2 s after the listener was called.
     */
    @Test
    void aListenerBlockedOnTheFirstLostLeaseLeavesNoOtherLeaseOfTheSessionValid() throws Exception {
        CuratorFramework client = client();
        CountDownLatch inListener = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> toldOn = new CopyOnWriteArrayList<>();
        LockRegistry registry = registry(client, new FencedLockListener() {
            @Override
            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                toldOn.add(Thread.currentThread().getName());
                inListener.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        opened.add(release::countDown); // a failed assertion must not leave the listener blocked
        LockRegistry other = registry(client(), new RecordingListener());
        Lease first = registry.lock(path + "/0", TokenSource.SEQUENCE).acquire();
        Lease second = registry.lock(path + "/1", TokenSource.SEQUENCE).acquire();

        // the session expires on the server, as after a network cut; the other client takes both locks
        ZooKeeper handle = zooKeeper(client);
        ZooKeeperSessions.expire(zk.connectString(), handle.getSessionId(), handle.getSessionPasswd());
        assertThat(inListener.await(30, TimeUnit.SECONDS)).isTrue();
        Lease firstTaken = other.lock(path + "/0", TokenSource.SEQUENCE)
                .tryAcquire(Duration.ofSeconds(20))
                .orElseThrow();
        Lease secondTaken = other.lock(path + "/1", TokenSource.SEQUENCE)
                .tryAcquire(Duration.ofSeconds(20))
                .orElseThrow();
        assertThat(firstTaken.token()).isGreaterThan(first.token());
        assertThat(secondTaken.token()).isGreaterThan(second.token());

        assertThat(release.getCount()).as("the listener is still blocked").isEqualTo(1);
        assertThat(first.isValid()).as("%s", first).isFalse();
        assertThat(second.isValid()).as("%s", second).isFalse();
        assertThat(toldOn).containsExactly("fenced-lock-listener");

        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> toldOn.size() == 2);
        first.close();
        second.close();
        firstTaken.close();
        secondTaken.close();
    }

    /**
     * An {@link Error} (an assertion, an {@code OutOfMemoryError}) between the grant and the lease: no lease
     * is handed out, so nothing would ever release the node, and every other contender would wait until the
     * session ends. The acquire throws the error itself, and the node is gone.
     */
    @Test
    void anErrorBetweenGrantAndRegistrationReleasesTheNodeAndIsThrown() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, new RecordingListener());
        AssertionError error = new AssertionError("between grant and registration");
        registry.beforeRegistering(Hooks.once(() -> {
            throw error;
        }));
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);

        assertThatThrownBy(lock::acquire).isSameAs(error);

        assertThat(client.getChildren().forPath(path))
                .as("the granted node is released")
                .containsExactly(LockParents.marker(0));
        assertThat(registry.liveLocks()).isZero();
        FencedLock other = registry(client(), new RecordingListener()).lock(path, TokenSource.SEQUENCE);
        long otherToken;
        try (Lease taken = other.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            otherToken = taken.token();
        }
        try (Lease again = lock.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(again.token()).as("the same thread, under a fresh node").isGreaterThan(otherToken);
        }
    }

    /**
     * As above, with the error inside Curator's wait for the lock, once the listing says the node holds it: Curator
     * deletes the node of a failed attempt on an {@link Exception} only.
     */
    @Test
    void anErrorInsideCuratorsGrantReleasesTheNodeAndIsThrown() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, new RecordingListener());
        AssertionError error = new AssertionError("inside Curator's grant");
        registry.whenNodeGranted(Hooks.once(() -> {
            throw error;
        }));
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);

        assertThatThrownBy(lock::acquire).isSameAs(error);

        assertThat(client.getChildren().forPath(path))
                .as("the granted node is released")
                .containsExactly(LockParents.marker(0));
        assertThat(registry.liveLocks()).isZero();
        try (Lease again = lock.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(again.isValid())
                    .as("the same thread, under a fresh node")
                    .isTrue();
        }
    }

    /** As above, with the error after the hold was registered: the registry forgets the hold, too. */
    @Test
    void anErrorAfterRegistrationReleasesTheNodeAndLeavesNoHoldBehind() throws Exception {
        CuratorFramework client = client();
        RecordingListener listener = new RecordingListener();
        LockRegistry registry = registry(client, listener);
        OutOfMemoryError error = new OutOfMemoryError("unable to create native thread");
        registry.afterRegistering(Hooks.once(() -> {
            throw error;
        }));
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);

        assertThatThrownBy(lock::acquire).isSameAs(error);

        assertThat(client.getChildren().forPath(path))
                .as("the granted node is released")
                .containsExactly(LockParents.marker(0));
        assertThat(registry.liveLocks()).isZero();
        try (Lease again = lock.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(again.isValid())
                    .as("a fresh grant, not the abandoned hold")
                    .isTrue();
            assertThat(client.getChildren().forPath(path)).hasSize(2); // the marker and this grant's node
        }
        registry.close();
        assertThat(listener.invalidations)
                .as("no abandoned hold is left for the close to invalidate")
                .isEmpty();
    }

    /**
     * An {@link Error} on a participant's thread between its grant and its term (here from the term's first check):
     * the candidacy ends with it, and its node goes with it. Left behind, the node was held by nobody until the
     * session ended, and no other participant was elected.
     */
    @Test
    void anErrorBetweenAParticipantsGrantAndItsTermEndsTheCandidacyWithItAndLetsTheNodeGo() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, new RecordingListener());
        AssertionError error = new AssertionError("between grant and term");
        AtomicBoolean once = new AtomicBoolean();
        registry.betweenValidityReads(() -> {
            if (Thread.currentThread().getName().startsWith("fenced-election-") && once.compareAndSet(false, true)) {
                throw error;
            }
        });
        FencedLeaderElection a = registry.election(path, TokenSource.SEQUENCE, "a");
        FencedLeaderElection b = registry(client(), new RecordingListener()).election(path, TokenSource.SEQUENCE, "b");
        opened.add(a);
        opened.add(b);

        CompletableFuture<LeaseLoss> over = a.lead(term -> {});

        assertThatThrownBy(() -> over.get(10, TimeUnit.SECONDS)).cause().isSameAs(error);
        assertThat(client.getChildren().forPath(path))
                .as("the granted node is released")
                .containsExactly(LockParents.marker(0));
        assertThat(b.awaitLeadership(Duration.ofSeconds(10)))
                .as("the next participant is elected")
                .isPresent();
        assertThat(a.isLeader()).isFalse();
    }

    @Test
    void anInterruptDuringVerifyKeepsTheFlagAndLeavesTheLeaseValid() {
        LockRegistry registry = registry(client(), new RecordingListener());
        try (Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire()) {
            Thread.currentThread().interrupt();

            assertThatThrownBy(lease::verify)
                    .isInstanceOf(LockInterruptedException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining(Long.toString(lease.token()));

            assertThat(Thread.interrupted()).as("interrupt flag kept").isTrue();
            assertThat(lease.isValid()).isTrue();
            assertThat(lease.verify()).isTrue();
        }
    }

    @Test
    void closingInvalidatesOpenLeasesWithTheirCauseAndRefusesAcquires() {
        CuratorFramework client = client();
        RecordingListener listener = new RecordingListener();
        LockRegistry registry = registry(client, listener);
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);
        Lease lease = lock.acquire();

        registry.close();

        assertThat(lease.isValid()).isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        assertThat(listener.invalidations).containsExactly(new Invalidation(lease.token(), LeaseLoss.LOCKS_CLOSED));
        assertThatThrownBy(lock::acquire)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(path)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> registry.lock(path, TokenSource.SEQUENCE)).isInstanceOf(IllegalStateException.class);
        // the holder still releases its node by closing the lease
        lease.close();
        FencedLock other = registry(client(), new RecordingListener()).lock(path, TokenSource.SEQUENCE);
        assertThat(other.tryAcquire(Duration.ofSeconds(5))).hasValueSatisfying(Lease::close);
    }

    /**
     * Curator's wait for the lock cannot be woken from outside, so closing the locks leaves an acquire that waits
     * behind another holder waiting, as documented; an interrupt ends it, and its queued node goes with it.
     */
    @Test
    void anAcquireWaitingAsTheLocksCloseKeepsWaitingUntilItsThreadIsInterrupted() throws Exception {
        Lease holder = registry(client(), new RecordingListener())
                .lock(path, TokenSource.SEQUENCE)
                .acquire();
        CuratorFramework client = client();
        LockRegistry registry = registry(client, new RecordingListener());
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);
        CompletableFuture<Lease> waiting = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                waiting.complete(lock.acquire());
            } catch (Throwable e) {
                waiting.completeExceptionally(e);
            }
        });
        waiter.setDaemon(true);
        waiter.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> lockNodes(client) == 2);

        registry.close();

        assertThatThrownBy(() -> waiting.get(700, TimeUnit.MILLISECONDS))
                .as("the acquire waiting behind another holder as the locks close")
                .isInstanceOf(java.util.concurrent.TimeoutException.class);
        waiter.interrupt();
        assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(LockInterruptedException.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> lockNodes(client) == 1);
        assertThat(holder.isValid()).isTrue();
        holder.close();
    }

    private long lockNodes(CuratorFramework client) throws Exception {
        return client.getChildren().forPath(path).stream()
                .filter(n -> n.contains("lock-"))
                .count();
    }

    /**
     * An acquire that registers its grant as the locks close hands out a lease that reads closed, and the listener
     * hears of it on its own thread: on the acquiring thread, a listener that waits for the holder to stop writing
     * (as it may for {@code LOCKS_CLOSED}) would wait, inside the acquire, for itself.
     */
    @Test
    void aGrantRegisteredAsTheLocksCloseIsToldOnTheListenersThreadNotTheAcquiringOne() throws Exception {
        List<String> toldOn = new CopyOnWriteArrayList<>();
        LockRegistry registry = registry(client(), new FencedLockListener() {
            @Override
            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                toldOn.add(Thread.currentThread().getName() + ": " + cause);
            }
        });
        registry.beforeRegistering(Hooks.once(() -> {
            Thread closer = new Thread(registry::close, "closer");
            closer.start();
            closer.join();
        }));

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        assertThat(lease.isValid()).isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        await().atMost(Duration.ofSeconds(10)).until(() -> !toldOn.isEmpty());
        assertThat(toldOn)
                .as(
                        "told once, not on the acquiring thread '%s'",
                        Thread.currentThread().getName())
                .containsExactly("fenced-lock-listener: " + LeaseLoss.LOCKS_CLOSED);
        lease.close();
    }

    @Test
    void lockStateOfManyPathsIsDroppedOnceUnusedWhileReEntryStillSharesIt() {
        LockRegistry registry = registry(client(), new RecordingListener());
        for (int i = 0; i < 200; i++) {
            registry.lock(path + "/sku-" + i, TokenSource.SEQUENCE).runLocked(Lease::token);
        }
        assertThat(registry.liveLocks()).isZero();

        try (Lease outer = registry.lock(path + "/sku-1", TokenSource.SEQUENCE).acquire();
                Lease inner =
                        registry.lock(path + "/sku-1", TokenSource.SEQUENCE).acquire()) {
            assertThat(inner.token()).isEqualTo(outer.token());
            assertThat(registry.liveLocks()).isEqualTo(1);
        }
        assertThat(registry.liveLocks()).isZero();
        assertThatThrownBy(
                        () -> registry.lock(path + "/sku-1", TokenSource.ZXID).runLocked(Lease::token))
                .as("an unused path holds no memory of its token source in the heap, but its parent's marker"
                        + " still refuses a ZXID lock, whose token a later SEQUENCE grant would go below")
                .isInstanceOf(ForeignLockParentException.class);
        assertThat(registry.liveLocks()).isZero();
    }

    /**
     * {@code client}, except that connection state listeners added through it never hear of an event:
     * as if Curator's event thread were late to deliver them.
     */
    static CuratorFramework heldBackConnectionEvents(CuratorFramework client) {
        Listenable<ConnectionStateListener> silent = new Listenable<>() {
            @Override
            public void addListener(ConnectionStateListener listener) {}

            @Override
            public void addListener(ConnectionStateListener listener, Executor executor) {}

            @Override
            public void removeListener(ConnectionStateListener listener) {}
        };
        return (CuratorFramework) Proxy.newProxyInstance(
                CuratorFramework.class.getClassLoader(), new Class<?>[] {CuratorFramework.class}, (proxy, m, args) -> {
                    if (m.getName().equals("getConnectionStateListenable")) {
                        return silent;
                    }
                    try {
                        return m.invoke(client, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static ZooKeeper zooKeeper(CuratorFramework client) {
        try {
            return client.getZookeeperClient().getZooKeeper();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private CuratorFramework client() {
        CuratorFramework client = Hooks.startedClient(zk.connectString());
        opened.add(client);
        return client;
    }

    private LockRegistry registry(CuratorFramework client, FencedLockListener listener) {
        LockRegistry registry =
                new LockRegistry(client, null, null, listener, FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        return registry;
    }
}
