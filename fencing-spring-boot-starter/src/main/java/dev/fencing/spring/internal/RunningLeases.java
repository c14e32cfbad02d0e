package dev.fencing.spring.internal;

import dev.fencing.lock.Lease;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * The leases under which the calling thread runs {@code @FencedLocked} methods and {@code @SchedulerLock}
 * jobs, innermost first: what {@code CurrentLease} reads. A lock belongs to the thread that took it, and
 * both take, run and release on one thread.
 */
public final class RunningLeases {
    private static final ThreadLocal<Deque<Lease>> RUNNING = new ThreadLocal<>();

    private RunningLeases() {}

    public static void push(Lease lease) {
        Deque<Lease> running = RUNNING.get();
        if (running == null) {
            running = new ArrayDeque<>();
            RUNNING.set(running);
        }
        running.push(lease);
    }

    /** Removes {@code lease}; the thread keeps no state once its last lease is gone (pooled threads). */
    public static void remove(Lease lease) {
        Deque<Lease> running = RUNNING.get();
        if (running != null) {
            running.removeFirstOccurrence(lease);
            if (running.isEmpty()) {
                RUNNING.remove();
            }
        }
    }

    /** The thread's leases, innermost first; empty if it runs under none. */
    public static List<Lease> all() {
        Deque<Lease> running = RUNNING.get();
        return running == null ? List.of() : List.copyOf(running);
    }

    public static Lease innermost() {
        Deque<Lease> running = RUNNING.get();
        return running == null ? null : running.peek();
    }
}
