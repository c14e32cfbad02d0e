package dev.fencing.demo;

import dev.fencing.harness.ChildJvm;
import dev.fencing.harness.PauseInjector;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The demo's pause fault: when, whom and where to freeze, and what the console says of it; the freezing itself is
 * the harness's {@link PauseInjector}, the same as verify's.
 *
 * <p>Every {@code pauseEvery}: pick a worker (seeded), arm it for a {@link WorkerEvent.PausePoint} ({@link #pointOf}); when the worker reports that it
 * stands there, still holding its lock, freeze it. Keep it frozen for
 * {@code pause} (longer than the session timeout, so ZooKeeper expires the session and hands the lock on),
 * and then for as long as it takes another worker to write (or publish) that SKU under a newer token, at most
 * another {@code pause}; then SIGCONT. The worker resumes exactly where it stood and goes on with its stale
 * write or publish, as a real paused process would (in lease-check mode, a worker frozen before its lease check
 * finds the lease lost there and writes nothing). In the fenced run the newer holder claims the row at
 * its read, so the frozen worker's write is refused even before the newer one writes; the schedule still
 * waits for that {@code WRITTEN} (which follows the claim) so that pauses look the same in both runs.
 *
 * <p>Thread-safe: {@link #onEvent} is called from the workers' reader threads.
 */
final class PauseSchedule {
    private final List<ChildJvm> workers;
    private final PauseInjector<WorkerEvent> injector;
    private final RunRecorder recorder;
    private final Duration pause;
    private final Duration pauseEvery;
    private final Random random;
    private final PrintStream progress;
    private final String label;
    private final Mode mode;
    private final CountDownLatch stop = new CountDownLatch(1);
    private volatile boolean pausing;
    private Thread thread;

    PauseSchedule(
            List<ChildJvm> workers,
            RunRecorder recorder,
            Duration pause,
            Duration pauseEvery,
            long seed,
            PrintStream progress,
            Mode mode) {
        this.workers = List.copyOf(workers);
        this.injector = new PauseInjector<>(id -> this.workers.get(id - 1));
        this.recorder = recorder;
        this.pause = pause;
        this.pauseEvery = pauseEvery;
        this.random = new Random(seed);
        this.progress = progress;
        this.mode = mode;
        this.label = mode.label();
    }

    void start() {
        thread = new Thread(this::loop, "demo-pause-injector");
        thread.setDaemon(true);
        thread.start();
    }

    /** Whether a worker is frozen (or about to be) right now. */
    boolean pausing() {
        return pausing;
    }

    /** Arms no more pauses, lets a pause in progress finish, and returns when the schedule is done. */
    void stop() {
        stop.countDown();
        if (thread != null) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Hands POINT events to the waiting injector, or lets the worker go on at once if nobody waits. */
    void onEvent(WorkerEvent event) {
        if (event.kind() == WorkerEvent.Kind.POINT) {
            injector.onPoint(event.worker(), event);
        }
    }

    private void loop() {
        int index = 0;
        try {
            while (!stop.await(pauseEvery.toMillis(), TimeUnit.MILLISECONDS)) {
                ChildJvm worker = workers.get(random.nextInt(workers.size()));
                WorkerEvent.PausePoint point = pointOf(mode, index);
                if (pauseAt(worker, point)) {
                    index++;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Where the {@code index}-th pause (from 0) falls: alternately between read and write and between write
     * and publish. In lease-check mode the pauses go round three points instead, right after the lease check,
     * right before it and between write and publish, so that even a short run shows both sides of the check:
     * a pause after it lands a stale write, a pause before it makes the worker refuse to write.
     */
    static WorkerEvent.PausePoint pointOf(Mode mode, int index) {
        if (mode == Mode.LEASE_CHECK) {
            return switch (index % 3) {
                case 0 -> WorkerEvent.PausePoint.AFTER_LEASE_CHECK;
                case 1 -> WorkerEvent.PausePoint.READ_WRITE;
                default -> WorkerEvent.PausePoint.WRITE_PUBLISH;
            };
        }
        return index % 2 == 0 ? WorkerEvent.PausePoint.READ_WRITE : WorkerEvent.PausePoint.WRITE_PUBLISH;
    }

    /** Where {@code point} is, in words. */
    static String describe(WorkerEvent.PausePoint point) {
        return switch (point) {
            case READ_WRITE -> "between read and write";
            case AFTER_LEASE_CHECK -> "after the lease check, before the write";
            case WRITE_PUBLISH -> "between write and publish";
        };
    }

    /** Arms {@code worker}, waits for it to reach {@code point}, freezes it. False if it never got there. */
    private boolean pauseAt(ChildJvm worker, WorkerEvent.PausePoint point) throws InterruptedException {
        pausing = true;
        try {
            Optional<WorkerEvent> at = injector.armAndAwait(
                    worker.id(), point.name(), Duration.ofMillis(Math.max(pauseEvery.toMillis(), 2_000)));
            if (at.isEmpty()) {
                return false;
            }
            freeze(worker, at.get(), point);
            return true;
        } finally {
            pausing = false;
        }
    }

    private void freeze(ChildJvm worker, WorkerEvent at, WorkerEvent.PausePoint point) throws InterruptedException {
        long mark = recorder.mark();
        WorkerEvent.Kind takeover =
                point == WorkerEvent.PausePoint.WRITE_PUBLISH ? WorkerEvent.Kind.PUBLISHED : WorkerEvent.Kind.WRITTEN;
        PauseInjector.Pause<WorkerEvent> frozen = injector.freezeUntilTakenOver(
                worker.id(),
                pause,
                pause,
                () -> progress.printf(
                        Locale.ROOT,
                        "[%s] SIGSTOP worker %d (pid %d) holding %s token %d, %s%n",
                        label,
                        worker.id(),
                        worker.pid(),
                        at.sku(),
                        at.token(),
                        describe(point)),
                wait -> recorder.await(
                        mark, e -> e.kind() == takeover && e.sku().equals(at.sku()) && e.token() > at.token(), wait));
        long start = frozen.startMillis();
        long end = frozen.endMillis();
        long nextToken = frozen.takeover().map(WorkerEvent::token).orElse(0L);
        recorder.add(new RunRecorder.Pause(worker.id(), at.sku(), at.token(), point, start, end, nextToken));
        progress.printf(
                Locale.ROOT,
                "[%s] SIGCONT worker %d after %.1fs; %s%n",
                label,
                worker.id(),
                (end - start) / 1000.0,
                frozen.takeover()
                        .map(next -> "meanwhile worker " + next.worker() + " took " + at.sku() + " over with token "
                                + nextToken)
                        .orElse("nobody wrote " + at.sku() + " meanwhile"));
    }
}
