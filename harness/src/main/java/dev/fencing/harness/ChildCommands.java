package dev.fencing.harness;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * A child JVM's side of the commands every coordinator sends it: {@code START} (begin the workload), {@code STOP}
 * (finish the current operation, then end; a child waiting at a point goes on at once and stops at no further
 * point) and the {@link PointGate}'s {@code ARM}, {@code DISARM} and {@code GO}. Thread-safe: the command thread
 * feeds it, the workload thread reads it.
 *
 * <pre>{@code
 * ChildCommands<PausePoint> commands = new ChildCommands<>(PausePoint.class, Duration.ofSeconds(30));
 * ParentLink.listen("worker", line -> { if (!commands.accept(line)) { ...the child's own commands... } }, 3);
 * commands.awaitStart();
 * while (!commands.stopping()) { ... commands.gate().pass(point, report) ... }
 * }</pre>
 *
 * @param <P> the child's points
 */
public final class ChildCommands<P extends Enum<P>> {
    private final CountDownLatch started = new CountDownLatch(1);
    private final PointGate<P> gate;
    private volatile boolean stopping;

    /** @param pointWaitLimit the longest a child waits at a point for GO (see {@link PointGate}) */
    public ChildCommands(Class<P> points, Duration pointWaitLimit) {
        this.gate = new PointGate<>(points, pointWaitLimit);
    }

    /**
     * Takes {@code START}, {@code STOP} and the gate's commands; false for any other line (the child's own).
     *
     * @throws IllegalArgumentException if {@code ARM} names no point of this child
     */
    public boolean accept(String line) {
        if (line.equals("START")) {
            started.countDown();
        } else if (line.equals("STOP")) {
            stopping = true;
            started.countDown();
            gate.disarm();
            gate.go();
        } else {
            return gate.command(line);
        }
        return true;
    }

    /** Waits for {@code START} (or {@code STOP}). */
    public void awaitStart() throws InterruptedException {
        started.await();
    }

    /** Whether {@code STOP} came. */
    public boolean stopping() {
        return stopping;
    }

    /** Where the child stops when the coordinator armed a point. */
    public PointGate<P> gate() {
        return gate;
    }
}
