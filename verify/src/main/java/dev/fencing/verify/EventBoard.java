package dev.fencing.verify;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The coordinator's recent view of what the children report, for the nemesis to wait on ("has another writer
 * written r2 under a newer token since I froze this one?"). Holds the last {@value #CAPACITY} events only, so a
 * long run's memory stays flat; the histories, not these events, are what the checker reads. Thread-safe.
 */
final class EventBoard {
    static final int CAPACITY = 20_000;

    private final ArrayDeque<ClientEvent> recent = new ArrayDeque<>();
    private long total;

    synchronized void add(ClientEvent event) {
        if (recent.size() == CAPACITY) {
            recent.removeFirst();
        }
        recent.addLast(event);
        total++;
        notifyAll();
    }

    /** A mark: {@link #await} considers only events added after it. */
    synchronized long mark() {
        return total;
    }

    /** Whether an event after {@code mark} matches, without waiting. */
    synchronized Optional<ClientEvent> find(long mark, Predicate<ClientEvent> match) {
        long sequence = total - recent.size();
        for (Iterator<ClientEvent> it = recent.iterator(); it.hasNext(); sequence++) {
            ClientEvent event = it.next();
            if (sequence >= mark && match.test(event)) {
                return Optional.of(event);
            }
        }
        return Optional.empty();
    }

    /** Waits up to {@code timeout} for an event after {@code mark} that matches; empty if none came. */
    synchronized Optional<ClientEvent> await(long mark, Predicate<ClientEvent> match, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Optional<ClientEvent> found = find(mark, match);
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
}
