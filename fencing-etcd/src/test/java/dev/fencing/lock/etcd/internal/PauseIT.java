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
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
    private static final Duration TOLERANCE = Duration.ofMillis(200);

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

        await().atMost(Duration.ofSeconds(10)).until(() -> waiterKeys.size() == 2);
        assertThat(held.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        Client outsider = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(outsider);
        assertThat(keysUnder(outsider, prefix))
                .extracting(kv -> text(kv.getKey()))
                .doesNotContain(waiterKeys.get(0))
                .contains(waiterKeys.get(1));
        held.close();
        Lease granted = waiter.get(10, TimeUnit.SECONDS);
        assertThat(granted.isValid()).isTrue();
        assertThat(granted.token()).isGreaterThan(held.token());
        threads.submit(granted::close).get(10, TimeUnit.SECONDS);
    }
}
