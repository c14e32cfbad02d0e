package dev.fencing.lock.spi;

import dev.fencing.lock.LeaseLoss;

/**
 * A backend's hold of one lock by one thread, from its grant to its release, as the leases of that thread read
 * it: re-entrant acquires share one hold and each gets its own {@link HeldLease}. The backend keeps the
 * validity contract of {@link dev.fencing.lock.Lease#isValid()} in {@link #isValid()}; {@link HeldLease} adds
 * the lease's own close.
 */
public interface LeaseHold {

    /** The grant's fence token. */
    long token();

    /** The lock's path or name, as {@link dev.fencing.lock.Lease#path()} reports it. */
    String path();

    /** The thread that acquired the hold: only it may close its leases. */
    Thread owner();

    /**
     * The backend's whole check: a pause, the session or lease on the lock service, the factory's close; marks
     * the hold (and tells the listener) when the check itself finds a loss.
     */
    boolean isValid();

    /** Asks the lock service whether the claim is still there; marks the hold if not. */
    boolean verify();

    /** Why the hold is invalid as far as is known without checking; null while no loss is marked. */
    LeaseLoss loss();

    /**
     * One lease of the hold closed: the hold is released when its owner's last lease closes. Called by {@link
     * HeldLease#close()} only, once per lease.
     *
     * @throws IllegalStateException on another thread than {@link #owner()}
     */
    void exit();

    /**
     * For implementations of {@link #exit()}: refuses a thread other than the hold's owner.
     *
     * @throws IllegalStateException naming the lock, the token and the owner thread
     */
    static void requireOwner(LeaseHold hold) {
        if (Thread.currentThread() != hold.owner()) {
            throw new IllegalStateException("the hold of " + hold.path() + " with fence token " + hold.token()
                    + " is released by the thread that acquired it ('"
                    + hold.owner().getName() + "') only");
        }
    }
}
