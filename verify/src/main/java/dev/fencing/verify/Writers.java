package dev.fencing.verify;

import dev.fencing.harness.ChildFleet;
import dev.fencing.harness.ChildJvm;
import dev.fencing.harness.PauseInjector;
import dev.fencing.verify.client.PausePoint;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's writer JVMs, as the nemesis sees them: which are busy with a fault (one fault per writer at a time),
 * and the harness's {@link PauseInjector} over them, whose hand-off at a {@link PausePoint} (arm a writer, wait
 * until it reports it stands there, then act) every fault on a writer uses. Also counts outcomes for the progress
 * line. Thread-safe.
 */
final class Writers implements AutoCloseable {
    private final ChildFleet children;
    private final boolean[] busy;
    private final PauseInjector<ClientEvent> pauses;
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong unknown = new AtomicLong();

    Writers(ChildFleet children) {
        this.children = children;
        this.busy = new boolean[children.size()];
        this.pauses = new PauseInjector<>(this::get);
    }

    int size() {
        return children.size();
    }

    /** Writer {@code id} (from 1). */
    ChildJvm get(int id) {
        return children.get(id);
    }

    List<ChildJvm> all() {
        return children.all();
    }

    /** The writers' JVMs, to start and stop them together. */
    ChildFleet fleet() {
        return children;
    }

    /** Every event of every writer passes here first. */
    void onEvent(ClientEvent event) {
        switch (event.kind()) {
            case "WRITTEN" -> written.incrementAndGet();
            case "REFUSED" -> refused.incrementAndGet();
            case "UNKNOWN" -> unknown.incrementAndGet();
            case "POINT" -> pauses.onPoint(event.id(), event);
            default -> {
                // other events matter to the board only
            }
        }
    }

    /** "312 written, 20 refused, 12 unknown": for progress. */
    String counts() {
        return written.get() + " written, " + refused.get() + " refused, " + unknown.get() + " unknown";
    }

    /**
     * Reserves a live writer that no fault is using: {@code target} modulo the writers, or the next free one
     * after it. Release it with {@link #release}.
     */
    synchronized OptionalInt reserve(int target) {
        for (int i = 0; i < busy.length; i++) {
            int index = (target + i) % busy.length;
            if (!busy[index] && children.get(index + 1).isAlive()) {
                busy[index] = true;
                return OptionalInt.of(index + 1);
            }
        }
        return OptionalInt.empty();
    }

    synchronized void release(int id) {
        busy[id - 1] = false;
    }

    /**
     * Arms writer {@code id} for {@code point} and waits until it stands there (its {@code POINT} event), at most
     * {@code timeout}. The writer then waits for {@code GO}, which the caller sends when done.
     *
     * @return the POINT event (fields: point, resource, token, backend pid), or empty if the writer did not get
     *     there in time (it is disarmed; if it gets there anyway, it is sent on at once)
     */
    Optional<ClientEvent> armAndAwait(int id, PausePoint point, Duration timeout) throws InterruptedException {
        return pauses.armAndAwait(id, point.name(), timeout);
    }

    /** The injector that pauses these writers (and hands their points to every fault). */
    PauseInjector<ClientEvent> pauses() {
        return pauses;
    }

    @Override
    public void close() {
        children.close();
    }
}
