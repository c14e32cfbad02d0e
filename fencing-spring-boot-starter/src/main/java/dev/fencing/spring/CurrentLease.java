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
 *
 * <p><b>After the lease is lost</b> (an expired session, a long pause) while the method or job still runs, this
 * still answers that lease, now with {@code isValid()} false and its {@code lossCause()}, and its token: a lost
 * grant's token is not withdrawn, since the resource is what refuses it, once a later holder's greater token has
 * written there. A method that must not even try a write after the loss checks {@code
 * CurrentLease.get().orElseThrow().ensureValid()} first (a {@code @FencedLocked} method can also ask to be
 * interrupted on loss).
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
