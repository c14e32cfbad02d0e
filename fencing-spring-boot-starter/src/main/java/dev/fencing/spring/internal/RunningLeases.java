package dev.fencing.spring.internal;

import dev.fencing.lock.Lease;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * The leases under which the calling thread runs {@code @FencedLocked} methods and {@code @SchedulerLock}
 * jobs, innermost first: what {@code CurrentLease} reads; and, apart from them, the leases of the {@code
 * FencedLockRegistry} locks it holds, which {@link LeasesCheckedAtCommit} checks with the others but {@code
 * CurrentLease} does not name (a {@code Lock}'s holder reads its token from the lock). A lock belongs to the
 * thread that took it, and all of them take, run and release on one thread.
 */
public final class RunningLeases {
    private static final ThreadLocal<Deque<Lease>> RUNNING = new ThreadLocal<>();
    private static final ThreadLocal<Deque<Lease>> HELD_LOCKS = new ThreadLocal<>();

    private RunningLeases() {}

    public static void push(Lease lease) {
        add(RUNNING, lease);
    }

    /** Removes {@code lease}; the thread keeps no state once its last lease is gone (pooled threads). */
    public static void remove(Lease lease) {
        remove(RUNNING, lease);
    }

    /** Adds the lease of a {@code Lock} the thread now holds: checked at commit, not {@code CurrentLease}'s. */
    public static void holdLock(Lease lease) {
        add(HELD_LOCKS, lease);
    }

    /** Removes the lease of a {@code Lock} the thread no longer holds. */
    public static void releaseLock(Lease lease) {
        remove(HELD_LOCKS, lease);
    }

    /** The thread's leases, innermost first, then its held locks' leases; empty if it runs under none. */
    public static List<Lease> all() {
        Deque<Lease> running = RUNNING.get();
        Deque<Lease> locks = HELD_LOCKS.get();
        if (locks == null) {
            return running == null ? List.of() : List.copyOf(running);
        }
        List<Lease> all = new ArrayList<>(running == null ? List.of() : running);
        all.addAll(locks);
        return List.copyOf(all);
    }

    private static void add(ThreadLocal<Deque<Lease>> leases, Lease lease) {
        Deque<Lease> held = leases.get();
        if (held == null) {
            held = new ArrayDeque<>();
            leases.set(held);
        }
        held.push(lease);
    }

    private static void remove(ThreadLocal<Deque<Lease>> leases, Lease lease) {
        Deque<Lease> held = leases.get();
        if (held != null) {
            held.removeFirstOccurrence(lease);
            if (held.isEmpty()) {
                leases.remove();
            }
        }
    }

    public static Lease innermost() {
        Deque<Lease> running = RUNNING.get();
        return running == null ? null : running.peek();
    }
}
