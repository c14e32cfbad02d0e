package dev.fencing.harness;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The child's side of the {@link PauseInjector}: the coordinator arms one point ({@code ARM <point>}); the next
 * time the child passes it, the child reports {@code POINT} and waits for {@code GO} (meanwhile the coordinator
 * freezes it, cuts its network or kills its backend). At most {@code limit} of waiting, so that a lost GO cannot
 * stall a child holding a lock for good. Thread-safe.
 *
 * <pre>{@code
 * PointGate<PausePoint> gate = new PointGate<>(PausePoint.class, Duration.ofSeconds(60));
 * // on the command thread: if (!gate.command(line)) { ...START, STOP... }
 * gate.pass(PausePoint.LOCK_WRITE, () -> emit("POINT", resource, token));
 * }</pre>
 *
 * @param <P> the child's points
 */
public final class PointGate<P extends Enum<P>> {
    private final Class<P> points;
    private final Duration limit;
    private final AtomicReference<P> armed = new AtomicReference<>();
    private final BlockingQueue<Boolean> go = new LinkedBlockingQueue<>();

    public PointGate(Class<P> points, Duration limit) {
        this.points = points;
        this.limit = limit;
    }

    public void arm(P point) {
        armed.set(point);
    }

    public void disarm() {
        armed.set(null);
    }

    public void go() {
        go.add(Boolean.TRUE);
    }

    /**
     * Takes the injector's commands: {@code ARM <point>}, {@code DISARM} and {@code GO}. False for any other line
     * (the child's own commands).
     *
     * @throws IllegalArgumentException if {@code ARM} names no point of this child
     */
    public boolean command(String line) {
        if (line.equals("GO")) {
            go();
        } else if (line.startsWith("ARM ")) {
            arm(Enum.valueOf(points, line.substring(4).trim()));
        } else if (line.equals("DISARM")) {
            disarm();
        } else {
            return false;
        }
        return true;
    }

    /**
     * If armed for {@code point}: disarms, runs {@code report} and waits for GO. Returns whether it stopped. An
     * interrupt ends the wait, with the thread's interrupt flag set.
     */
    public boolean pass(P point, Runnable report) {
        if (!armed.compareAndSet(point, null)) {
            return false;
        }
        go.clear();
        report.run();
        try {
            go.poll(limit.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }
}
