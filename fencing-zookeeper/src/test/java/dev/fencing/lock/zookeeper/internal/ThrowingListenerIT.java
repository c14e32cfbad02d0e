package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A listener that throws an {@link Error} (an assertion of the application's, a stack overflow) where the
 * library guarded against {@link RuntimeException} only: the error ended the notification of an event half-way
 * (the other leases it invalidated were never told), escaped {@code close()} before it withdrew anything else,
 * and escaped an acquire after the hold was registered, leaving the lock held by a thread with no lease to close.
 */
class ThrowingListenerIT {
    private final List<AutoCloseable> opened = new ArrayList<>();
    private EmbeddedZooKeeper zk;
    private String path;

    /** Records every call, and throws what {@code error} gives on the first call of each kind. */
    static final class ThrowingListener implements FencedLockListener {
        final List<String> invalidations = new CopyOnWriteArrayList<>();
        final List<String> regressions = new CopyOnWriteArrayList<>();
        private final Supplier<Error> error;
        private final AtomicBoolean thrownOnInvalidation = new AtomicBoolean();
        private final AtomicBoolean thrownOnRegression = new AtomicBoolean();

        ThrowingListener(Supplier<Error> error) {
            this.error = error;
        }

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            invalidations.add(lease.path() + ":" + cause);
            if (thrownOnInvalidation.compareAndSet(false, true)) {
                throw error.get();
            }
        }

        @Override
        public void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {
            regressions.add(previousToken + ">" + newToken);
            if (thrownOnRegression.compareAndSet(false, true)) {
                throw error.get();
            }
        }
    }

    @BeforeEach
    void start(TestInfo test) {
        zk = EmbeddedZooKeeper.builder().build();
        path = "/it/throwing-listener/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        zk.close();
    }

    @Test
    void aListenerErrorOnTheFirstLeaseOfAPauseStillLetsTheOtherLeaseBeTold() throws Exception {
        ThrowingListener listener = new ThrowingListener(() -> new StackOverflowError("listener recursed"));
        LockRegistry registry = registry(client(), listener, Duration.ofSeconds(1));
        Lease first = registry.lock(path + "/0", TokenSource.SEQUENCE).acquire();
        Lease second = registry.lock(path + "/1", TokenSource.SEQUENCE).acquire();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        // the detector is held past the tolerance: it sees one pause and invalidates both leases in one event
        registry.beforeDetectorTick(Hooks.once(() -> {
            held.countDown();
            resume.await();
        }));
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        long heldAt = System.nanoTime();
        await().dontCatchUncaughtExceptions()
                .pollInterval(Duration.ofMillis(50))
                .until(() -> System.nanoTime() - heldAt > TimeUnit.MILLISECONDS.toNanos(1_500));
        resume.countDown();

        // (the listener's error must fail this test through the missing call, not as an uncaught error)
        await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                        listener.invalidations)
                .containsExactlyInAnyOrder(
                        path + "/0:" + LeaseLoss.PAUSE_DETECTED, path + "/1:" + LeaseLoss.PAUSE_DETECTED));
        first.close();
        second.close();
    }

    @Test
    void aListenerErrorWhileClosingStillTellsEveryLeaseAndCloseReturns() {
        ThrowingListener listener = new ThrowingListener(() -> new AssertionError("listener bug"));
        LockRegistry registry = registry(client(), listener, null);
        Lease first = registry.lock(path + "/0", TokenSource.SEQUENCE).acquire();
        Lease second = registry.lock(path + "/1", TokenSource.SEQUENCE).acquire();

        registry.close();

        assertThat(listener.invalidations)
                .containsExactlyInAnyOrder(
                        path + "/0:" + LeaseLoss.LOCKS_CLOSED, path + "/1:" + LeaseLoss.LOCKS_CLOSED);
        first.close();
        second.close();
    }

    /**
     * The marker of a held lock's parent is set by hand to a lower base (the parent deleted and made again):
     * the next grant's token goes backwards, and the listener that is told so throws. The grant is still
     * handed out, and its node released when its lease is closed.
     */
    @Test
    void aListenerErrorOnATokenRegressionStillHandsOutTheGrantWhichReleasesItsNode() throws Exception {
        CuratorFramework client = client();
        client.create().creatingParentsIfNeeded().forPath(path);
        client.create().forPath(path + "/" + LockParents.marker(1_000));
        client.create()
                .creatingParentsIfNeeded()
                .forPath(LockParents.historyOf(path), "1000".getBytes(StandardCharsets.US_ASCII));
        ThrowingListener listener = new ThrowingListener(() -> new AssertionError("listener bug"));
        LockRegistry registry = registry(client, listener, null);
        Lease first = registry.lock(path, TokenSource.SEQUENCE).acquire();
        assertThat(first.token()).isEqualTo(1_002);
        client.delete().deletingChildrenIfNeeded().forPath(path);
        client.create().forPath(path);
        client.create().forPath(path + "/" + LockParents.marker(0));

        CompletableFuture<Long> second = CompletableFuture.supplyAsync(() -> {
            try (Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire()) {
                return lease.token();
            }
        });

        assertThat(second.get(20, TimeUnit.SECONDS)).isEqualTo(2);
        assertThat(listener.regressions).containsExactly("1002>2");
        assertThat(client.getChildren().forPath(path))
                .as("the second grant's node is released with its lease")
                .containsExactly(LockParents.marker(0));
        first.close();
    }

    private CuratorFramework client() {
        CuratorFramework client = Hooks.startedClient(zk.connectString());
        opened.add(client);
        return client;
    }

    private LockRegistry registry(CuratorFramework client, FencedLockListener listener, Duration pauseTolerance) {
        LockRegistry registry =
                new LockRegistry(client, null, pauseTolerance, listener, FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        return registry;
    }
}
