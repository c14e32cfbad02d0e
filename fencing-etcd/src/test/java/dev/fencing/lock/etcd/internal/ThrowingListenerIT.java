package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A listener that throws an {@link Error} where the library guarded against {@link RuntimeException} only: the
 * error ended the notification of an event half-way (the other leases it invalidated were never told) and
 * escaped {@code close()}.
 */
class ThrowingListenerIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    private static final Duration TOLERANCE = Duration.ofMillis(200);

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String prefix;

    /** Records every call, and throws what {@code error} gives on the first. */
    static final class ThrowingListener implements FencedLockListener {
        final List<String> invalidations = new CopyOnWriteArrayList<>();
        private final Supplier<Error> error;
        private final AtomicBoolean thrown = new AtomicBoolean();

        ThrowingListener(Supplier<Error> error) {
            this.error = error;
        }

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            invalidations.add(lease.path() + ":" + cause);
            if (thrown.compareAndSet(false, true)) {
                throw error.get();
            }
        }
    }

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/throwing-listener/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private EtcdLockRegistry registry(FencedLockListener listener) {
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, TTL, TOLERANCE, listener);
        opened.add(registry);
        return registry;
    }

    @Test
    void aListenerErrorOnTheFirstLeaseOfAPauseStillLetsTheOtherLeaseBeTold() throws Exception {
        ThrowingListener listener = new ThrowingListener(() -> new StackOverflowError("listener recursed"));
        EtcdLockRegistry registry = registry(listener);
        Lease first = registry.lock("a").acquire();
        Lease second = registry.lock("b").acquire();
        // the detector is held past the tolerance: it sees one pause and invalidates both leases in one event
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        AtomicBoolean once = new AtomicBoolean();
        registry.beforeDetectorTick(() -> {
            if (once.compareAndSet(false, true)) {
                held.countDown();
                try {
                    resume.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));

        resume.countDown();

        // (the listener's error must fail this test through the missing call, not as an uncaught error)
        await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                        listener.invalidations)
                .containsExactlyInAnyOrder(
                        first.path() + ":" + LeaseLoss.PAUSE_DETECTED, second.path() + ":" + LeaseLoss.PAUSE_DETECTED));
        first.close();
        second.close();
    }

    @Test
    void aListenerErrorWhileClosingStillTellsEveryLeaseAndCloseReturns() {
        ThrowingListener listener = new ThrowingListener(() -> new AssertionError("listener bug"));
        EtcdLockRegistry registry = registry(listener);
        Lease first = registry.lock("a").acquire();
        Lease second = registry.lock("b").acquire();

        registry.close();

        assertThat(listener.invalidations)
                .containsExactlyInAnyOrder(
                        first.path() + ":" + LeaseLoss.LOCKS_CLOSED, second.path() + ":" + LeaseLoss.LOCKS_CLOSED);
        first.close();
        second.close();
    }
}
