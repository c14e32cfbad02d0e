package dev.fencing.spring;

import dev.fencing.lock.Lease;
import dev.fencing.spring.internal.RunningLeases;
import java.util.Optional;

/**
 * The lease, and so the fence token, of the innermost {@link FencedLocked} method or ShedLock
 * {@code @SchedulerLock} job ({@link FencedLockProvider}) running on the calling thread: for a method that
 * cannot take a {@link FenceToken} parameter, such as a {@code @Scheduled} method (which must have none).
 *
 * <pre>{@code
 * @Scheduled(fixedDelay = 60_000)
 * @FencedLocked(value = "/locks/jobs/cleanup", skipIfLocked = true)
 * public void cleanup() {
 *     writer.update(cleanupRow(), CurrentLease.token());
 * }
 * }</pre>
 *
 * <p>A lock belongs to the thread that took it, and so does this: work handed to another thread must take the
 * token along. Read it inside the method; outside, there is none. Thread-safe.
 */
public final class CurrentLease {
    private CurrentLease() {}

    /** The lease of the innermost locked method or job running on this thread, if any. */
    public static Optional<Lease> get() {
        return Optional.ofNullable(RunningLeases.innermost());
    }

    /**
     * The fence token of the innermost locked method or job running on this thread.
     *
     * @throws IllegalStateException if none runs on this thread
     */
    public static long token() {
        Lease lease = RunningLeases.innermost();
        if (lease == null) {
            throw new IllegalStateException("no @FencedLocked method or @SchedulerLock job locked by a"
                    + " FencedLockProvider runs on thread "
                    + Thread.currentThread().getName()
                    + ": read the token inside it, on its thread");
        }
        return lease.token();
    }
}
