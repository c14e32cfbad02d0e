package dev.fencing.lock;

/**
 * Where a lock grant's fence token comes from. Both are read from the response to the create that
 * makes the holder's lock node: neither costs an extra ZooKeeper round trip.
 */
public enum TokenSource {
    /**
     * The holder node's sequence number plus one (ZooKeeper numbers the first child of a fresh parent
     * 0, and protected resources start at 0, so tokens start at 1). Small, readable, and strictly
     * increasing per lock path for as long as the lock's parent node lives: the library creates
     * parents PERSISTENT so ZooKeeper never reaps them. If an operator deletes the parent anyway, the
     * sequence restarts and tokens go backwards; resources then refuse the new holder (safe, not
     * live) and {@link FencedLockListener#tokenRegressed} says why. The counter is the parent's
     * 32-bit {@code cversion}, bumped by every child create and delete; the library refuses to issue
     * tokens as it nears its wrap (see {@link FencedLocks.Builder#sequenceWrapMargin(int)}).
     */
    SEQUENCE,

    /**
     * The holder node's {@code czxid}: the 64-bit id of the transaction that created it (leader epoch
     * in the high 32 bits). Strictly increasing across parent deletion, leader failover and server
     * restarts, and comparable across lock paths; large numbers.
     */
    ZXID
}
