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
    private final int groups;
    private final PauseInjector<ClientEvent> pauses;
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong unknown = new AtomicLong();

    Writers(ChildFleet children, int groups) {
        this.children = children;
        this.groups = groups;
        this.busy = new boolean[children.size()];
        this.pauses = new PauseInjector<>(this::get);
    }

    /**
     * The number of groups of writers that contend for the same locks in a run of {@code settings}, for {@link
     * #pick}: for the election resource the elections the writers take part in, which are fewer than the resources
     * where there are fewer than two writers per resource ({@link ElectionWorkload#elections}); 1 otherwise.
     */
    static int groups(VerifySettings settings) {
        return settings.resource() == Resource.ELECTION
                ? ElectionWorkload.elections(settings.resources(), settings.clients())
                : 1;
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
     * after it. Release it with {@link #release}. For a fault that counts only once another writer took the lock
     * over ({@code takenOver}), only a writer that leaves another free, live writer of its group (one that can take
     * its locks over): a fault holding every participant of an election at once (one paused, the other cut off)
     * waits out its time for a takeover that cannot come and counts for neither, and the run then reaches its
     * minimums late or not within its hard limit.
     */
    synchronized OptionalInt reserve(int target, boolean takenOver) {
        boolean[] alive = new boolean[busy.length];
        for (int i = 0; i < alive.length; i++) {
            alive[i] = children.get(i + 1).isAlive();
        }
        OptionalInt picked = pick(busy, alive, groups, target, takenOver);
        picked.ifPresent(id -> busy[id - 1] = true);
        return picked;
    }

    /**
     * The writer (from 1) {@link #reserve} takes, from whether each is busy and alive (by index from 0) and the
     * number of groups of writers that contend for the same locks (writer {@code c} in group {@code (c - 1) %
     * groups}: an election's participants; 1 where every writer may take any lock).
     */
    static OptionalInt pick(boolean[] busy, boolean[] alive, int groups, int target, boolean takenOver) {
        for (int i = 0; i < busy.length; i++) {
            int index = (target + i) % busy.length;
            if (!busy[index] && alive[index] && (!takenOver || freePeer(busy, alive, groups, index))) {
                return OptionalInt.of(index + 1);
            }
        }
        return OptionalInt.empty();
    }

    private static boolean freePeer(boolean[] busy, boolean[] alive, int groups, int index) {
        for (int peer = index % groups; peer < busy.length; peer += groups) {
            if (peer != index && !busy[peer] && alive[peer]) {
                return true;
            }
        }
        return false;
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
