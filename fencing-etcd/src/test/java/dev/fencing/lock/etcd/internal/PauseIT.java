package dev.fencing.lock.etcd.internal;

import static dev.fencing.lock.etcd.internal.EtcdTesting.keysUnder;
import static dev.fencing.lock.etcd.internal.EtcdTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.etcd.internal.LeaseLossIT.RecordingListener;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Pauses of this JVM, made deterministic by holding the shared pause detector where a frozen JVM would hold it
 * (its round hook), and releasing it exactly where the test needs the detector to run.
 */
class PauseIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    /**
     * Well above what a loaded machine starves the detector's thread of (250 to 460 ms seen at load 26 on two cores),
     * so that only the pauses the tests make count; they hold the detector for longer than this.
     */
    private static final Duration TOLERANCE = Duration.ofSeconds(1);

    private final List<AutoCloseable> opened = new ArrayList<>();
    /** One thread: a lease is closed by the thread that acquired it. */
    private final ExecutorService threads = Executors.newSingleThreadExecutor();

    private String prefix;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/pause/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        threads.shutdownNow();
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

    /** Holds the detector in its next round until {@code resume} opens; returns once it is held. */
    private static void holdDetector(EtcdLockRegistry registry, CountDownLatch resume) throws InterruptedException {
        CountDownLatch held = new CountDownLatch(1);
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
    }

    /**
     * The detector marks every hold, then moves its tick. A check that read the mark first could read the old
     * mark, lose the processor while the detector marks and ticks, then read the new tick and answer valid after
     * a detected pause. Here the detector runs exactly between the check's two reads.
     */
    @Test
    void aCheckThatBeginsAfterAPauseReadsInvalidEvenWhenTheDetectorMarksAndTicksBetweenItsReads() throws Exception {
        EtcdLockRegistry registry = registry(new FencedLockListener() {});
        Lease lease = registry.lock("between").acquire();
        CountDownLatch resume = new CountDownLatch(1);
        holdDetector(registry, resume);
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));
        AtomicBoolean once = new AtomicBoolean();
        registry.betweenValidityReads(() -> {
            if (once.compareAndSet(false, true)) {
                // the JVM resumes; the detector marks the hold and moves its tick while the check is between reads
                resume.countDown();
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> registry.pauses().lastTick() != tickBefore);
            }
        });

        boolean valid = lease.isValid();

        assertThat(once).isTrue();
        assertThat(valid).as("a check that began after the pause").isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        lease.close();
    }

    @Test
    void aDetectedPauseInvalidatesAHeldLeaseAndTellsTheListener() throws Exception {
        RecordingListener told = new RecordingListener();
        EtcdLockRegistry registry = registry(told);
        Lease lease = registry.lock("held").acquire();
        CountDownLatch resume = new CountDownLatch(1);
        holdDetector(registry, resume);
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));

        resume.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().lastTick() != tickBefore);
        assertThat(EtcdLockRegistry.holdOf(lease).loss()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        assertThat(lease.isValid()).isFalse();
        await().atMost(Duration.ofSeconds(10)).until(() -> told.causes.contains(LeaseLoss.PAUSE_DETECTED));
        lease.close();
    }

    /**
     * A waiter whose JVM paused cannot trust its etcd lease any more (its keep-alives stopped too): it gives its
     * key up and contends again with a new one, and is granted a valid lease once the holder releases.
     */
    @Test
    void aWaiterThatPausedContendsAgainWithANewKeyAndIsGrantedAValidLease() throws Exception {
        EtcdLockRegistry registry = registry(new FencedLockListener() {});
        List<String> waiterKeys = new CopyOnWriteArrayList<>();
        registry.predecessorWatched((waiter, predecessor) -> waiterKeys.add(waiter));
        FencedLock lock = registry.lock("waiting");
        Lease held = lock.acquire();
        Future<Lease> waiter = threads.submit(() -> lock.acquire());
        await().atMost(Duration.ofSeconds(10)).until(() -> waiterKeys.size() == 1);
        CountDownLatch resume = new CountDownLatch(1);
        holdDetector(registry, resume);
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));

        resume.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> waiterKeys.size() >= 2);
        assertThat(held.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        Client outsider = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(outsider);
        assertThat(keysUnder(outsider, prefix))
                .extracting(kv -> text(kv.getKey()))
                .doesNotContain(waiterKeys.get(0))
                .contains(waiterKeys.get(waiterKeys.size() - 1));
        held.close();
        Lease granted = waiter.get(10, TimeUnit.SECONDS);
        assertThat(granted.isValid()).isTrue();
        assertThat(granted.token()).isGreaterThan(held.token());
        threads.submit(granted::close).get(10, TimeUnit.SECONDS);
    }

    /**
     * The JVM pauses exactly between a grant and the moment the hold becomes the thread's: the detector marks the
     * hold, not granted yet, and tells nobody of it. The acquire then hands out a lease that reads invalid, of which
     * the listener must hear all the same, once.
     */
    @Test
    void aPauseDetectedBetweenAGrantAndItsRegistrationIsToldOnceAfterTheGrant() throws Exception {
        TokenListener told = new TokenListener();
        EtcdLockRegistry registry = registry(told);
        AtomicBoolean once = new AtomicBoolean();
        registry.beforeGranted(granting -> {
            if (once.compareAndSet(false, true)) {
                // the detector marks every hold, tells, and only then moves its tick: all of it before the grant
                pauseAndAwaitDetector(registry);
            }
        });

        Lease lease = registry.lock("granted").acquire();

        assertThat(once).isTrue();
        assertThat(lease.isValid()).as("a lease marked before its grant").isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        awaitToldOfEarlierLosses(registry, told);
        assertThat(told.causesOf(lease.token()))
                .as("losses told of the lease handed out")
                .containsExactly(LeaseLoss.PAUSE_DETECTED);
        lease.close();
    }

    /**
     * The detector marks the hold before the grant, but reads whether it is granted only after the acquire has made
     * it the thread's and read the mark: both sides find the loss of a granted hold, and only one of them tells it.
     */
    @Test
    void aPauseMarkedBeforeAGrantAndReadAfterItIsToldOnlyOnce() throws Exception {
        TokenListener told = new TokenListener();
        EtcdLockRegistry registry = registry(told);
        CountDownLatch acquired = new CountDownLatch(1);
        // armed once the detector is held, so that only the test's own pause is held after its mark
        AtomicBoolean armed = new AtomicBoolean();
        // runs on the marking thread right after the mark, before the marker reads whether the hold is granted
        Runnable onLoss = () -> {
            if (armed.compareAndSet(true, false)) {
                try {
                    acquired.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        AtomicBoolean once = new AtomicBoolean();
        registry.beforeGranted(granting -> {
            if (once.compareAndSet(false, true)) {
                CountDownLatch resume = new CountDownLatch(1);
                holdDetectorAfterAPause(registry, resume);
                armed.set(true);
                resume.countDown();
                await().atMost(Duration.ofSeconds(10)).until(() -> granting.loss() != null);
            }
        });
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();

        EtcdHold hold = registry.acquire("granted", null, EtcdTesting.bytes("test"), onLoss)
                .orElseThrow();
        acquired.countDown();

        assertThat(once).isTrue();
        assertThat(armed)
                .as("whether the detector's mark of the hold was still to be held")
                .isFalse();
        assertThat(hold.loss()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().lastTick() != tickBefore);
        awaitToldOfEarlierLosses(registry, told);
        assertThat(told.causesOf(hold.token))
                .as("losses told of the lease handed out")
                .containsExactly(LeaseLoss.PAUSE_DETECTED);
        registry.exit(hold);
    }

    /**
     * The detector marks a held lease, and before it reads whether the hold is granted, the holder closes the lease:
     * the lease reads lost to the pause, not released, and the listener must hear of that loss, as of one a holder
     * found itself and then closed its lease.
     */
    @Test
    void aPauseMarkedAsTheHolderReleasesIsStillTold() throws Exception {
        TokenListener told = new TokenListener();
        EtcdLockRegistry registry = registry(told);
        CountDownLatch released = new CountDownLatch(1);
        // armed once the detector is held, so that only the test's own pause is held after its mark
        AtomicBoolean armed = new AtomicBoolean();
        // runs on the marking thread right after the mark, before the marker reads whether the hold is granted
        Runnable onLoss = () -> {
            if (armed.compareAndSet(true, false)) {
                try {
                    released.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        EtcdHold hold = registry.acquire("released", null, EtcdTesting.bytes("test"), onLoss)
                .orElseThrow();
        Lease lease = new HeldLease(hold, false);
        CountDownLatch resume = new CountDownLatch(1);
        PauseDetector.Tick tickBefore = holdDetectorAfterAPause(registry, resume);
        armed.set(true);
        resume.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> hold.loss() != null);

        lease.close();
        released.countDown();

        assertThat(armed)
                .as("whether the detector's mark of the hold was still to be held")
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().lastTick() != tickBefore);
        awaitToldOfEarlierLosses(registry, told);
        assertThat(told.causesOf(lease.token()))
                .as("losses told of the lease closed after its loss")
                .containsExactly(LeaseLoss.PAUSE_DETECTED);
    }

    /** Holds the detector in its next round until a pause is due, lets it go, and waits until it moved its tick. */
    private static void pauseAndAwaitDetector(EtcdLockRegistry registry) {
        CountDownLatch resume = new CountDownLatch(1);
        PauseDetector.Tick tickBefore = holdDetectorAfterAPause(registry, resume);
        resume.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().lastTick() != tickBefore);
    }

    /** Holds the detector until {@code resume} opens; returns its tick once it counts as paused. */
    private static PauseDetector.Tick holdDetectorAfterAPause(EtcdLockRegistry registry, CountDownLatch resume) {
        try {
            holdDetector(registry, resume);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));
        return tickBefore;
    }

    /**
     * Makes one more loss (another lock's key deleted) and waits until the listener is told of it: the listener is
     * told on one thread, in the order the losses were found, so every loss found before has been told by then.
     */
    private void awaitToldOfEarlierLosses(EtcdLockRegistry registry, TokenListener told) throws Exception {
        Lease sentinel = registry.lock("sentinel").acquire();
        Client outsider = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(outsider);
        EtcdLockIT.delete(
                outsider, keysUnder(outsider, registry.contendersOf("sentinel")).get(0));
        await().atMost(Duration.ofSeconds(10))
                .until(() -> !told.causesOf(sentinel.token()).isEmpty());
        sentinel.close();
    }

    /** Records each loss told with the token of its lease. */
    static final class TokenListener implements FencedLockListener {
        private final List<Map.Entry<Long, LeaseLoss>> told = new CopyOnWriteArrayList<>();

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            told.add(Map.entry(lease.token(), cause));
        }

        List<LeaseLoss> causesOf(long token) {
            return told.stream()
                    .filter(entry -> entry.getKey() == token)
                    .map(Map.Entry::getValue)
                    .toList();
        }
    }
}
