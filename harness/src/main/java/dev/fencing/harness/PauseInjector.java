package dev.fencing.harness;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

/**
 * Pauses child JVMs in the middle of their operation, the way a long stop-the-world GC pause would, for the demo
 * and verify alike. Two halves, used one after the other:
 *
 * <ol>
 *   <li>The hand-off at a point ({@link #armAndAwait}): the child is sent {@code ARM <point>}; the next time it
 *       passes that point it reports a {@code POINT} event (which the tool hands to {@link #onPoint}) and waits
 *       for {@code GO}. A child that does not get there in time is sent {@code DISARM}; one that reports a point
 *       nobody waits for any more is sent {@code GO} at once, so it never waits out its own limit holding a lock.
 *       Faults other than a pause (a network cut, a backend kill) use this half alone.
 *   <li>The pause itself ({@link #freezeUntilTakenOver}): SIGSTOP through {@link ChildJvm#freeze}, which returns
 *       only when every thread of the child is stopped (SIGSTOP merely queues the signal: a freezer that says
 *       "frozen" before that lets the child read its {@code GO} and run on). Then {@code GO} is sent (it waits in
 *       the pipe until SIGCONT), the child stays frozen for {@code pause} (longer than its session timeout, so
 *       ZooKeeper expires the session and hands the lock on) and then until another child has taken its resource
 *       over, at most {@code takeoverWait} more; then SIGCONT. The child resumes exactly where it stood and goes
 *       on with its now stale write or publish, as a really paused process would.
 * </ol>
 *
 * <p>Thread-safe: {@link #onPoint} is called from the children's reader threads, the rest from the tool's fault
 * threads; a child takes one fault at a time (the caller's business).
 *
 * <pre>{@code
 * PauseInjector<Event> pauses = new PauseInjector<>(id -> workers.get(id - 1));
 * // on each child's reader thread: if (event.isPoint()) pauses.onPoint(event.worker(), event);
 * Optional<Event> at = pauses.armAndAwait(3, "READ_WRITE", Duration.ofSeconds(5));
 * if (at.isPresent()) {
 *     int mark = recorder.size();
 *     PauseInjector.Pause<Event> pause = pauses.freezeUntilTakenOver(
 *             3, Duration.ofSeconds(3), Duration.ofSeconds(3), () -> {},
 *             wait -> recorder.await(mark, e -> e.isNewerWriteOf(at.get()), wait));
 * }
 * }</pre>
 *
 * @param <E> the tool's event type (the demo's worker events, verify's client events)
 */
public final class PauseInjector<E> {
    private final IntFunction<ChildJvm> children;
    private final Map<Integer, CompletableFuture<E>> claims = new ConcurrentHashMap<>();

    /** @param children the child by its id (from 1), as the tool numbers them */
    public PauseInjector(IntFunction<ChildJvm> children) {
        this.children = children;
    }

    /**
     * Waits for the event that shows another child took the paused one's resource over (wrote or published it
     * under a newer token), looking only at events that came after the pause began.
     *
     * @param <T> what the takeover is seen as
     */
    @FunctionalInterface
    public interface Takeover<T> {
        /** The takeover, waiting up to {@code timeout} for it; empty if none came. */
        Optional<T> await(Duration timeout) throws InterruptedException;
    }

    /**
     * One pause, over.
     *
     * @param startMillis when SIGSTOP was sent, epoch ms
     * @param endMillis when SIGCONT was sent, epoch ms
     * @param takeover what showed another child took the resource over meanwhile; empty if none did
     * @param <T> what the takeover is seen as
     */
    public record Pause<T>(long startMillis, long endMillis, Optional<T> takeover) {}

    /**
     * Hands child {@code id}'s {@code POINT} event to the {@link #armAndAwait} waiting for it, or sends the child
     * on at once if nobody waits.
     */
    public void onPoint(int id, E point) {
        CompletableFuture<E> claim = claims.remove(id);
        if (claim == null || !claim.complete(point)) {
            children.apply(id).send("GO");
        }
    }

    /**
     * Arms child {@code id} for {@code point} and waits until it stands there (its {@code POINT} event), at most
     * {@code timeout}. The child then waits for {@code GO}, which the caller sends when done (a {@link
     * #freezeUntilTakenOver} sends it).
     *
     * @return the {@code POINT} event, or empty if the child did not get there in time (it is disarmed; if it
     *     gets there anyway, it is sent on at once)
     */
    public Optional<E> armAndAwait(int id, String point, Duration timeout) throws InterruptedException {
        CompletableFuture<E> claim = new CompletableFuture<>();
        claims.put(id, claim);
        ChildJvm child = children.apply(id);
        child.send("ARM " + point);
        try {
            return Optional.of(claim.get(timeout.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            if (claims.remove(id, claim)) {
                child.send("DISARM");
                return Optional.empty();
            }
            return Optional.of(claim.join()); // it arrived just now
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Freezes child {@code id}, which stands at an armed point waiting for {@code GO}, for {@code pause} and then
     * until {@code takeover} sees its resource taken over (at most {@code takeoverWait} more), and thaws it. The
     * caller creates {@code takeover} before calling, so that it looks at every event from before the freeze on.
     *
     * @param frozen runs once every thread of the child is stopped, before {@code GO} is sent (to say so)
     * @throws HarnessException if the child cannot be frozen or resumed
     */
    public <T> Pause<T> freezeUntilTakenOver(
            int id, Duration pause, Duration takeoverWait, Runnable frozen, Takeover<T> takeover)
            throws InterruptedException {
        ChildJvm child = children.apply(id);
        long start = System.currentTimeMillis();
        // the resumer's limit only matters if this JVM stops meanwhile: past the longest pause, with room
        child.freeze(pause.plus(takeoverWait).plusSeconds(10));
        Optional<T> next;
        try {
            frozen.run();
            child.send("GO"); // waits in the pipe until SIGCONT
            Thread.sleep(pause.toMillis()); // the coordinator waits; the child is the one frozen
            next = takeover.await(takeoverWait);
        } finally {
            child.thaw();
        }
        return new Pause<>(start, System.currentTimeMillis(), next);
    }
}
