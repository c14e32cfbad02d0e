package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link FencedLockRegistry} on the shared real ZooKeeper: two registries on two Curator clients (two
 * instances of a service) exclude each other, a holder reads rising tokens, and the {@code Lock} contract holds
 * (reentrancy, timeouts, interrupts, unlock by a non-holder).
 */
class FencedLockRegistryIT {
    private static CuratorFramework clientA;
    private static CuratorFramework clientB;
    private static FencedLocks locksA;
    private static FencedLocks locksB;
    private static FencedLockRegistry atA;
    private static FencedLockRegistry atB;

    @BeforeAll
    static void start() {
        String connect = ZooKeeperServers.shared().connectString();
        clientA = CuratorFrameworkFactory.newClient(connect, new RetryOneTime(100));
        clientB = CuratorFrameworkFactory.newClient(connect, new RetryOneTime(100));
        clientA.start();
        clientB.start();
        locksA = FencedLocks.builder(clientA).build();
        locksB = FencedLocks.builder(clientB).build();
        atA = new FencedLockRegistry(locksA, "/locks/registry-it");
        atB = new FencedLockRegistry(locksB, "/locks/registry-it");
    }

    @AfterAll
    static void stop() {
        locksA.close();
        locksB.close();
        clientA.close();
        clientB.close();
    }

    @Test
    void aLockHeldInOneRegistryIsRefusedToTheOtherAndItsNextHolderGetsAGreaterToken() throws Exception {
        FencedLockRegistry.KeyLock a = atA.obtain("order-1");
        assertThat(atA.obtain("order-1")).isSameAs(a);
        assertThat(a.path()).isEqualTo("/locks/registry-it/order-1");

        a.lock();
        long first;
        try {
            first = a.token();
            assertThat(first).isPositive();
            assertThat(a.lease().isValid()).isTrue();
            // another instance cannot have it meanwhile
            assertThat(call(() -> atB.obtain("order-1").tryLock(200, TimeUnit.MILLISECONDS)))
                    .isEqualTo(false);
            assertThat(call(() -> atB.obtain("order-1").tryLock())).isEqualTo(false);
        } finally {
            a.unlock();
        }

        FencedLockRegistry.KeyLock b = atB.obtain("order-1");
        assertThat(b.tryLock(10, TimeUnit.SECONDS)).isTrue();
        try {
            assertThat(b.token()).isGreaterThan(first);
        } finally {
            b.unlock();
        }
    }

    @Test
    void theHoldingThreadReentersWithTheSameTokenAndReleasesAtItsLastUnlock() throws Exception {
        FencedLockRegistry.KeyLock lock = atA.obtain("order-2");
        lock.lock();
        Lease lease = lock.lease();
        lock.lockInterruptibly();
        assertThat(lock.tryLock()).isTrue();
        assertThat(lock.token()).isEqualTo(lease.token());

        lock.unlock();
        lock.unlock();
        assertThat(lease.isValid()).as("held after two of three unlocks").isTrue();
        assertThat(call(() -> atB.obtain("order-2").tryLock())).isEqualTo(false);

        lock.unlock();
        assertThat(lease.isValid()).isFalse();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThat(call(() -> {
                    FencedLockRegistry.KeyLock other = atB.obtain("order-2");
                    boolean got = other.tryLock(10, TimeUnit.SECONDS);
                    other.unlock();
                    return got;
                }))
                .isEqualTo(true);
    }

    /**
     * A holder whose session expired (as after a long pause) is told so by a re-entrant {@code tryLock}, which
     * Spring Integration's leader initiator calls on each heartbeat: false while another instance holds the
     * lock, and a fresh grant with a greater token once it is free; never true on the lost lease.
     */
    @Test
    void aReentrantTryLockAfterTheSessionExpiredDoesNotAnswerOnTheLostLease() throws Exception {
        String connect = ZooKeeperServers.shared().connectString();
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(connect, new RetryOneTime(100))) {
            client.start();
            client.blockUntilConnected(10, TimeUnit.SECONDS);
            try (FencedLocks locks = FencedLocks.builder(client).build()) {
                FencedLockRegistry.KeyLock held = new FencedLockRegistry(locks, "/locks/registry-it").obtain("leader");
                held.lock();
                Lease lostLease = held.lease();
                long lost = lostLease.token();
                ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
                ZooKeeperSessions.expire(connect, handle.getSessionId(), handle.getSessionPasswd());
                await().atMost(Duration.ofSeconds(30)).until(() -> !lostLease.isValid());

                CountDownLatch taken = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                CompletableFuture<Long> other = CompletableFuture.supplyAsync(() -> {
                    FencedLockRegistry.KeyLock b = atB.obtain("leader");
                    try {
                        if (!b.tryLock(10, TimeUnit.SECONDS)) {
                            return -1L;
                        }
                    } catch (InterruptedException e) {
                        return -1L;
                    }
                    try {
                        taken.countDown();
                        release.await(30, TimeUnit.SECONDS);
                        return b.token();
                    } catch (InterruptedException e) {
                        return -1L;
                    } finally {
                        b.unlock();
                    }
                });
                assertThat(taken.await(30, TimeUnit.SECONDS)).isTrue();
                assertThat(held.tryLock())
                        .as("re-entrant tryLock while another instance holds the lock")
                        .isFalse();
                release.countDown();
                long others = other.get(30, TimeUnit.SECONDS);
                assertThat(others).isGreaterThan(lost);

                assertThat(held.tryLock(10, TimeUnit.SECONDS))
                        .as("re-entrant tryLock once the lock is free")
                        .isTrue();
                assertThat(held.lease().isValid()).isTrue();
                assertThat(held.token()).isGreaterThan(others);
                held.unlock();
                held.unlock();
                assertThat(held.isHeldByCurrentThread()).isFalse();
            }
        }
    }

    @Test
    void anotherThreadOfTheSameRegistryWaitsAndCannotUnlockIt() throws Exception {
        FencedLockRegistry.KeyLock lock = atA.obtain("order-3");
        lock.lock();
        try {
            assertThat(call(() -> lock.tryLock(100, TimeUnit.MILLISECONDS))).isEqualTo(false);
            assertThat(call(() -> {
                        lock.unlock();
                        return "unlocked";
                    }))
                    .isInstanceOf(IllegalMonitorStateException.class);
            assertThat(call(lock::token)).isInstanceOf(IllegalMonitorStateException.class);
        } finally {
            lock.unlock();
        }
        assertThatThrownBy(lock::unlock)
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("/locks/registry-it/order-3");
        assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void aWaiterOnZooKeeperIsInterruptedOutOfLockInterruptiblyAndTheKeyStaysUsable() throws Exception {
        FencedLockRegistry.KeyLock held = atA.obtain("order-4");
        held.lock();
        int nodes = clientA.getChildren().forPath("/locks/registry-it/order-4").size();
        FencedLockRegistry.KeyLock waiting = atB.obtain("order-4");
        FutureTask<Object> waiter = new FutureTask<>(() -> {
            waiting.lockInterruptibly();
            return "locked";
        });
        Thread thread = new Thread(waiter, "waiter");
        thread.start();
        try {
            // the waiter is in ZooKeeper's queue: it has added its node
            await().atMost(Duration.ofSeconds(10)).until(() -> nodes("/locks/registry-it/order-4") > nodes);
            thread.interrupt();
            assertThatThrownBy(() -> waiter.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(InterruptedException.class);
        } finally {
            held.unlock();
        }
        assertThat(call(() -> {
                    boolean got = waiting.tryLock(10, TimeUnit.SECONDS);
                    waiting.unlock();
                    return got;
                }))
                .isEqualTo(true);
    }

    @Test
    void theHolderReadsItsTokenFromTheLock() throws Exception {
        FencedLockRegistry registry = atA;
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            FencedLockRegistry.KeyLock lock = registry.obtain("order-42");
            lock.lockInterruptibly();
            try {
                long token = lock.token(); // send it with every write made under the lock
                tokens.add(token);
            } finally {
                lock.unlock();
            }
        }
        assertThat(tokens.get(1)).isGreaterThan(tokens.get(0));
    }

    @Test
    void aKeyThatIsNotOnePathSegmentIsRefused() {
        assertThatThrownBy(() -> atA.obtain("orders/1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("orders/1");
        assertThatThrownBy(() -> atA.obtain(42)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new FencedLockRegistry(locksA, "locks/x"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static int nodes(String path) throws Exception {
        return clientA.getChildren().forPath(path).size();
    }

    /** Runs {@code work} on a thread of its own; returns its result or what it threw. */
    private static Object call(java.util.concurrent.Callable<?> work) throws Exception {
        Future<Object> result = CompletableFuture.supplyAsync(() -> {
            try {
                return work.call();
            } catch (Throwable t) {
                return t;
            }
        });
        return result.get(30, TimeUnit.SECONDS);
    }
}
