package dev.fencing.demo;

import dev.fencing.harness.EventBoard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Collects what happens during one run: every worker event and every injected pause, for the counters, the
 * progress lines and the timeline. Thread-safe (worker reader threads add, the coordinator reads and waits).
 */
final class RunRecorder {
    private final EventBoard<WorkerEvent> events = new EventBoard<>(Integer.MAX_VALUE);
    private final List<Pause> pauses = new ArrayList<>();
    private final Map<WorkerEvent.Kind, Long> counts = new EnumMap<>(WorkerEvent.Kind.class);

    /**
     * One SIGSTOP of a worker that held a lock.
     *
     * @param worker the frozen worker
     * @param sku the SKU whose lock it held
     * @param token the token of that lock grant
     * @param point where in its operation it was frozen
     * @param startMillis when SIGSTOP was sent, epoch millis
     * @param endMillis when SIGCONT was sent, epoch millis
     * @param nextToken the token of the holder that wrote the SKU meanwhile, or 0 if none did
     */
    record Pause(
            int worker,
            String sku,
            long token,
            WorkerEvent.PausePoint point,
            long startMillis,
            long endMillis,
            long nextToken) {
        /** Whether another worker took the SKU over (wrote, or published, under a newer token) meanwhile. */
        boolean landed() {
            return nextToken > 0;
        }
    }

    void add(WorkerEvent event) {
        events.add(event); // first: a kind counted is a kind that events() holds
        synchronized (this) {
            counts.merge(event.kind(), 1L, Long::sum);
        }
    }

    synchronized void add(Pause pause) {
        pauses.add(pause);
    }

    synchronized long count(WorkerEvent.Kind kind) {
        return counts.getOrDefault(kind, 0L);
    }

    List<WorkerEvent> events() {
        return events.recent();
    }

    synchronized List<Pause> pauses() {
        return List.copyOf(pauses);
    }

    /** The first event recorded after {@code mark} that matches, waiting up to {@code timeout}. */
    Optional<WorkerEvent> await(long mark, Predicate<WorkerEvent> match, Duration timeout) throws InterruptedException {
        return events.await(mark, match, timeout);
    }

    /** A mark: {@link #await} considers only events recorded after it. */
    long mark() {
        return events.mark();
    }
}
