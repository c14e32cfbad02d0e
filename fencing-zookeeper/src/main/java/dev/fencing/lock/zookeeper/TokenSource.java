package dev.fencing.lock.zookeeper;

/**
 * Where a lock grant's fence token comes from. Both are read from the response to the create that
 * makes the holder's lock node: neither costs an extra ZooKeeper round trip.
 */
public enum TokenSource {
    /**
     * The holder node's sequence number + 1: 2 for the first grant of a fresh lock, small and readable.
     * The library creates the lock's parent with a marker child (which takes sequence 0 and keeps the
     * parent from ever being empty, so ZooKeeper's container reaper never deletes it and a plain
     * {@code delete} fails) and a history node under {@code /fencing-lock-history} holding the parent's
     * base. Tokens are strictly increasing per lock path, also across a recursive deletion of the
     * parent: a parent the library finds deleted is created again with a base {@code 2^31} above the
     * previous one, above every token granted before (token = base + sequence + 1), at the cost of large
     * tokens from then on. With base 0 the token equals the earlier fencing-zookeeper's ({@code sequence + 1}),
     * so clients of both versions on one parent never collide. A parent without the marker (a plain
     * Curator lock's CONTAINER parent, one made by hand) is refused with {@link
     * ForeignLockParentException}: nothing is known about the tokens granted under it. An operator who
     * knows a bound N on them adopts it by writing N to its history node first and then creating the
     * marker {@code fencing-base-N}, as the exception's message says.
     *
     * <p>Not covered: deleting the history node together with the parent (or deleting the parent of
     * one adopted by its marker alone, without the history) makes the next grant look like the first
     * one, with token 2; so does a recreation through a client whose connect string has a different
     * chroot (a Curator namespace is accounted for). Protect both with ACLs, or use {@link #ZXID}.
     *
     * <p>The counter is the parent's 32-bit child-create count (deletes do not advance it); the library
     * refuses to issue tokens as it nears its wrap (see {@link FencedLocks.Builder#sequenceWrapMargin(int)}).
     */
    SEQUENCE,

    /**
     * The holder node's {@code czxid}: the 64-bit id of the transaction that created it (leader epoch
     * in the high 32 bits). Strictly increasing across parent deletion, leader failover and server
     * restarts, and comparable across lock paths (within one ensemble: a new ensemble, or a server
     * that lost its data directory, starts its zxids again); large numbers. Needs nothing of the
     * parent, so the library creates ZXID parents as CONTAINERs, which ZooKeeper deletes once unused. A
     * path keeps the token source it was first used with: before its first grant on a path in a process (one
     * read, then remembered), a ZXID lock
     * makes sure the path's history node under {@code /fencing-lock-history} says {@code zxid} (it writes
     * it if missing, also on a parent it found already there, such as a plain Curator lock's CONTAINER),
     * which makes SEQUENCE locks refuse the path once the parent is gone. A SEQUENCE lock's parent (one
     * with a marker), or a path whose history names a SEQUENCE base (a SEQUENCE parent whose marker was
     * deleted), is refused with {@link ForeignLockParentException}: tokens would go backwards between the
     * two sources.
     */
    ZXID
}
