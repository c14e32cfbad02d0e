package dev.fencing.verify.client;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The writer's side of a planned fault: the coordinator arms one {@link PausePoint}; the next time the writer
 * passes it, the writer reports {@code POINT} and waits for {@code GO} (meanwhile the coordinator freezes it,
 * cuts its network or kills its backend). At most {@link #LIMIT} of waiting, so a lost GO cannot stall a
 * writer for good. Thread-safe.
 */
final class PointGate {
    static final Duration LIMIT = Duration.ofSeconds(60);

    private final AtomicReference<PausePoint> armed = new AtomicReference<>();
    private final BlockingQueue<Boolean> go = new LinkedBlockingQueue<>();

    void arm(PausePoint point) {
        armed.set(point);
    }

    void disarm() {
        armed.set(null);
    }

    void go() {
        go.add(Boolean.TRUE);
    }

    /**
     * If armed for {@code point}: disarms, runs {@code report} and waits for GO. Returns whether it stopped.
     */
    boolean pass(PausePoint point, Runnable report) {
        if (!armed.compareAndSet(point, null)) {
            return false;
        }
        go.clear();
        report.run();
        try {
            go.poll(LIMIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }
}
