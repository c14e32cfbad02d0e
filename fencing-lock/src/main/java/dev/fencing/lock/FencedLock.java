package dev.fencing.lock;

import java.time.Duration;
import java.util.Optional;

/**
 * A distributed mutex whose every grant carries a fence token that is greater than that of every earlier
 * grant of the same lock. With ZooKeeper it is Curator's {@code InterProcessMutex} recipe (ephemeral
 * sequential nodes, GUID-protected creates, each waiter watching only its predecessor).
 *
 * <p>Why the token: a holder can stop between checking its lock and its write reaching the resource.
 *
 * <pre>
 *  client A: acquire (token 7) ... GC pause ...................... write(token 7) -> REFUSED
 *  lock service:               A's session expires -> B acquires
 *  client B:                                acquire (token 8) write(token 8) -> stored 8
 * </pre>
 *
 * No lock service can stop A's late write; the resource can, by refusing tokens older than the
 * newest it has accepted. Use {@code fencing-jdbc} or {@code fencing-kafka} on the resource side.
 *
 * <p>Obtain instances from a backend's lock factory (with ZooKeeper, {@code
 * dev.fencing.lock.zookeeper.FencedLocks.lock(String)}) and reuse them. Thread-safe; each grant belongs
 * to the thread that acquired it, and a thread that acquires a lock it already holds through the same
 * factory gets a lease with the same token (re-entry). Through another factory (with ZooKeeper, another
 * Curator client, or another namespace view of the same one) it is a contender like any other and waits
 * for itself.
 *
 * <pre>{@code
 * FencedLock lock = locks.lock("/locks/sku-42");
 * try (Lease lease = lock.acquire()) {
 *     inventory.decrement("sku-42", 1, lease.token());
 * }
 * Optional<Lease> maybe = lock.tryAcquire(Duration.ofSeconds(2));
 * int stock = lock.runLocked(lease -> inventory.read("sku-42"));
 * }</pre>
 */
public interface FencedLock {

    /** The lock path (with ZooKeeper, lock nodes are its children). */
    String path();

    /**
     * Blocks until this thread holds the lock.
     *
     * @throws LockInterruptedException if interrupted while waiting (the interrupt flag is restored)
     * @throws LockAcquisitionException if the lock service fails beyond the client's retry policy
     * @throws FencedLockException for a backend's own refusals (with ZooKeeper, {@code
     *     FenceTokenExhaustedException} when the sequence counter nears its wrap, {@code
     *     ForeignLockParentException} when a SEQUENCE lock's parent was not made by this library)
     * @throws LeaseLostException if this thread re-enters a lock whose lease was invalidated
     * @throws IllegalStateException if the lock factory that made this lock is closed
     * @return the lease; already invalid (see {@link Lease#lossCause()}) if the connection was lost, the
     *     session or lease changed, or this JVM paused, between the holder's claim and the grant, or if
     *     the lock factory was closed while this call waited
     */
    Lease acquire();

    /**
     * Waits at most {@code timeout} for the holders before it to release the lock. The requests that contend
     * (with ZooKeeper, the lock node's creation; with etcd, the lease, the key and the read of the predecessor)
     * are made once whatever the timeout, bounded by the backend's own request or session timeouts: a timeout
     * of a nanosecond is one attempt, granted when the lock is free.
     *
     * @return the lease, or empty if another holder kept the lock for the whole timeout
     * @throws IllegalArgumentException if the timeout is null, zero or negative
     */
    Optional<Lease> tryAcquire(Duration timeout);

    /** Acquires, runs {@code work} with the lease, and releases, whatever the work does. */
    <T> T runLocked(LeasedWork<T> work);
}
