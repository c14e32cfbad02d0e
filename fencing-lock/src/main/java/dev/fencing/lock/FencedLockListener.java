package dev.fencing.lock;

/**
 * Told when something happens to a lock that the holder must act on.
 *
 * <p>A lease is marked invalid before its listener is called, and an event that concerns several
 * leases (a lost connection, an ended session or lease, a pause of this JVM, closing the lock factory)
 * marks all of them invalid before the first call: however long a listener takes, every lease the
 * event concerns already answers {@code isValid() == false}.
 *
 * <p>Connection events, pauses and sessions found ended in the background (with ZooKeeper: Curator
 * replaced its handle, or the client was closed) are told on a thread of the lock factory's own (with
 * ZooKeeper, named {@code fenced-lock-listener}), one call after another in the order the leases were
 * invalidated, so a slow listener delays only later calls, never an invalidation. Everything else is told
 * there too, or on the thread that found it, as each backend says: the thread closing the lock factory, the
 * acquiring thread (for a grant that was disrupted before it was registered, or whose token went
 * backwards), or a thread that checks or verifies a lease and finds it lost. ZooKeeper's {@code FencedLocks}
 * tells every loss on its own thread except {@link LeaseLoss#LOCKS_CLOSED}, told on the closing thread (but for a
 * grant an acquire takes up as they close, told on its own thread), so a listener there may wait for the holder's
 * thread to stop writing without waiting for itself. Return quickly
 * all the same, and do not acquire locks from here.
 *
 * <p>Whatever a listener throws, exceptions and errors alike, is logged at ERROR and not thrown on: the
 * leases are marked invalid before the call, so nothing of the library's state depends on it, and the other
 * leases of the same event are still told, the lock factory still closes, and a grant whose token went
 * backwards is still handed out. That holds for a {@link VirtualMachineError} too: a {@link
 * StackOverflowError} is the listener's own, and thrown on, an {@link OutOfMemoryError} would only stop the
 * telling of the other leases; a JVM that must stop on it is told so with {@code
 * -XX:+ExitOnOutOfMemoryError}, which acts where the error is raised, before any catch.
 */
public interface FencedLockListener {

    /** The lease stopped being valid: stop writing under its token and close it. */
    default void leaseInvalidated(Lease lease, LeaseLoss cause) {}

    /**
     * A grant of {@code lockPath} got a token lower than one this process had seen before on that
     * path (while the path was in use here). Each backend says when this can happen; with ZooKeeper's
     * {@code TokenSource.SEQUENCE} the library prevents it itself unless someone deleted the parent's
     * history too, set its marker by hand to a base that is too low, or made a marker by hand without
     * writing its base to the history node; with {@code TokenSource.ZXID}, the client now talks to
     * another ensemble.
     *
     * @param explanation the same plain-words explanation the library logs
     */
    default void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {}
}
