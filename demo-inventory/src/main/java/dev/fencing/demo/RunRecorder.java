package dev.fencing.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Collects what happens during one run: every worker event and every injected pause, for the counters, the
 * progress lines and the timeline. Thread-safe (worker reader threads add, the coordinator reads and waits).
 */
final class RunRecorder {
    private final List<WorkerEvent> events = new ArrayList<>();
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

    synchronized void add(WorkerEvent event) {
        events.add(event);
        counts.merge(event.kind(), 1L, Long::sum);
        notifyAll();
    }

    synchronized void add(Pause pause) {
        pauses.add(pause);
    }

    synchronized long count(WorkerEvent.Kind kind) {
        return counts.getOrDefault(kind, 0L);
    }

    synchronized List<WorkerEvent> events() {
        return List.copyOf(events);
    }

    synchronized List<Pause> pauses() {
        return List.copyOf(pauses);
    }

    /** The first event recorded after index {@code from} that matches, waiting up to {@code timeout}; or null. */
    synchronized WorkerEvent await(int from, Predicate<WorkerEvent> match, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int next = from;
        while (true) {
            for (; next < events.size(); next++) {
                if (match.test(events.get(next))) {
                    return events.get(next);
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    /** The number of events so far, as a starting index for {@link #await}. */
    synchronized int size() {
        return events.size();
    }
}
