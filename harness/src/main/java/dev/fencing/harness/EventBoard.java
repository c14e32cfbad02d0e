package dev.fencing.harness;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The coordinator's view of what its children report, for faults to wait on ("has another writer written r2 under
 * a newer token since I froze this one?"). Holds the last {@code capacity} events only, so that a long run's memory
 * can stay flat. Thread-safe: children's reader threads add, the coordinator and its faults wait.
 *
 * <pre>{@code
 * EventBoard<ClientEvent> board = new EventBoard<>(20_000);
 * long mark = board.mark();
 * // ... freeze a writer ...
 * Optional<ClientEvent> takeover = board.await(mark, e -> e.is("WRITTEN") && e.token() > token, pause);
 * }</pre>
 *
 * @param <E> an event
 */
public final class EventBoard<E> {
    private final int capacity;
    private final ArrayDeque<E> recent = new ArrayDeque<>();
    private long total;

    /** @param capacity how many of the latest events it holds; {@link Integer#MAX_VALUE} for all of them */
    public EventBoard(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
    }

    public synchronized void add(E event) {
        if (recent.size() == capacity) {
            recent.removeFirst();
        }
        recent.addLast(event);
        total++;
        notifyAll();
    }

    /** A mark: {@link #await} considers only events added after it. */
    public synchronized long mark() {
        return total;
    }

    /** Whether an event after {@code mark} matches, without waiting. */
    public synchronized Optional<E> find(long mark, Predicate<E> match) {
        long sequence = total - recent.size();
        for (Iterator<E> it = recent.iterator(); it.hasNext(); sequence++) {
            E event = it.next();
            if (sequence >= mark && match.test(event)) {
                return Optional.of(event);
            }
        }
        return Optional.empty();
    }

    /** Waits up to {@code timeout} for an event after {@code mark} that matches; empty if none came. */
    public synchronized Optional<E> await(long mark, Predicate<E> match, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Optional<E> found = find(mark, match);
            if (found.isPresent()) {
                return found;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.empty();
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    /** The events it holds, oldest first: all of them while fewer than its capacity came. */
    public synchronized List<E> recent() {
        return List.copyOf(recent);
    }

    /** How many events came in all, also those it no longer holds. */
    public synchronized long total() {
        return total;
    }
}
