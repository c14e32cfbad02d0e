package dev.fencing.lock;

/**
 * One grant of a {@link FencedLock}: its fence token, and whether it is still safe to act on.
 *
 * <p>Pass {@link #token()} with every write to a protected resource; the resource refuses a write
 * whose token is older than one it has already accepted. Validity here is advisory: a holder can be
 * frozen between {@link #isValid()} and its write, which is exactly why the resource checks the
 * token.
 *
 * <p><b>What {@link #isValid()} promises.</b> A check that <em>begins</em> after any of these answers
 * {@code false}, and keeps answering {@code false}:
 *
 * <ul>
 *   <li>this JVM stopped (GC, {@code SIGSTOP}, a suspended machine) for longer than the pause tolerance, as
 *       the monotonic or the wall clock measured it (a virtual machine paused by its hypervisor, whose clocks
 *       both stood still, is not seen here: see {@code dev.fencing.lock.spi.PauseDetector});
 *   <li>the client lost its connection to the lock service, or the session or lease that keeps the
 *       holder's claim alive ended, however the client learned of it (with ZooKeeper, also when Curator
 *       replaced its handle, which closes the old session before Curator reports LOST, and when the
 *       Curator client itself was closed);
 *   <li>{@link #close()} returned (the cause is then {@link LeaseLoss#RELEASED}, unless the lease had lost
 *       its lock before);
 *   <li>the backend's lock factory (with ZooKeeper, {@code FencedLocks}) was closed, or {@link #verify()}
 *       found the holder's claim gone.
 * </ul>
 *
 * One of these events between the holder's claim on the lock service (with ZooKeeper, its lock node)
 * and the grant yields a lease that is invalid from the start. The {@link FencedLockListener} is told
 * of connection events, ended sessions and pauses. What the check cannot know: a pause that has not
 * ended yet, and a server that expired the session or lease while this client still looked connected
 * without pausing (a partition the client has not noticed, shorter than its connection timeout), which
 * is why the resource checks the token. A holder that finds its lease invalid should stop writing and
 * close it; to continue, acquire again (with a new, greater token).
 *
 * <p>Thread-safe for reads; {@link #close()} must be called by the thread that acquired the lock
 * (locks are owned by threads) and is safe to call twice.
 *
 * <pre>{@code
 * try (Lease lease = lock.acquire()) {
 *     Row row = read(key);
 *     lease.ensureValid();                       // cheap, local: stop early if we know we lost it
 *     write(key, row.minus(qty), lease.token()); // the resource is what actually refuses a late write
 * }
 * }</pre>
 */
public interface Lease extends FencedGrant, AutoCloseable {

    /**
     * Releases this grant (the lock itself when the last re-entrant grant closes). Safe to call
     * twice. Never throws for a lost session or lease: the lock service removes the holder's claim with
     * it anyway.
     */
    @Override
    void close();
}
