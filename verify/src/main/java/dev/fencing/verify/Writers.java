package dev.fencing.verify;

import dev.fencing.harness.ChildJvm;
import dev.fencing.verify.client.PausePoint;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's writer JVMs, as the nemesis sees them: which are busy with a fault (one fault per writer at a time),
 * and the hand-off at a {@link PausePoint}: arm a writer, wait until it reports it stands there, then act. A
 * writer that reports a point nobody waits for any more is sent on at once, so it never waits out its limit
 * holding a lock (or a row, inside a transaction). Also counts outcomes for the progress line. Thread-safe.
 */
final class Writers implements AutoCloseable {
    private final List<ChildJvm> children;
    private final boolean[] busy;
    private final Map<Integer, CompletableFuture<ClientEvent>> claims = new ConcurrentHashMap<>();
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong unknown = new AtomicLong();

    Writers(List<ChildJvm> children) {
        this.children = List.copyOf(children);
        this.busy = new boolean[children.size()];
    }

    int size() {
        return children.size();
    }

    /** Writer {@code id} (from 1). */
    ChildJvm get(int id) {
        return children.get(id - 1);
    }

    List<ChildJvm> all() {
        return children;
    }

    /** Every event of every writer passes here first. */
    void onEvent(ClientEvent event) {
        switch (event.kind()) {
            case "WRITTEN" -> written.incrementAndGet();
            case "REFUSED" -> refused.incrementAndGet();
            case "UNKNOWN" -> unknown.incrementAndGet();
            case "POINT" -> {
                CompletableFuture<ClientEvent> claim = claims.remove(event.id());
                if (claim == null || !claim.complete(event)) {
                    get(event.id()).send("GO");
                }
            }
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
            if (!busy[index] && children.get(index).isAlive()) {
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
        CompletableFuture<ClientEvent> claim = new CompletableFuture<>();
        claims.put(id, claim);
        ChildJvm writer = get(id);
        writer.send("ARM " + point.name());
        try {
            return Optional.of(claim.get(timeout.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            if (claims.remove(id, claim)) {
                writer.send("DISARM");
                return Optional.empty();
            }
            return Optional.of(claim.join()); // it arrived just now
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        children.forEach(ChildJvm::close);
    }
}
