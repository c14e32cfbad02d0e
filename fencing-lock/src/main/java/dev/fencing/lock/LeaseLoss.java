package dev.fencing.lock;

/** Why a {@link Lease} stopped being valid. */
public enum LeaseLoss {
    /**
     * The client lost its connection to the lock service (with ZooKeeper, SUSPENDED; with etcd, its deletion
     * watch broke and no read confirmed the holder's key for the lease TTL); the session or lease may still be
     * alive, but nobody can tell from here.
     */
    CONNECTION_SUSPENDED,
    /**
     * The lock service's session or lease that kept the holder's claim alive is gone: the server has
     * deleted, or will delete, the holder's claim (with ZooKeeper, its ephemeral lock node). With ZooKeeper
     * also the cause when Curator replaced its handle (an expired session, a changed connect string), which
     * closes the old session before Curator reports LOST, when the handle that owns the node was closed,
     * and when the Curator client was closed (which reports nothing).
     */
    SESSION_LOST,
    /**
     * This JVM stopped running (GC, SIGSTOP, page faults, a suspended machine) for longer than the pause
     * tolerance, so the session or lease may have expired meanwhile, even if the client has not noticed
     * yet.
     */
    PAUSE_DETECTED,
    /**
     * {@link Lease#verify()} asked the lock service: the holder's claim is gone or belongs to another
     * session or lease.
     */
    NODE_GONE,
    /**
     * The backend's lock factory that made the lock (with ZooKeeper, {@code FencedLocks}) was closed:
     * nothing watches the lease any more.
     */
    LOCKS_CLOSED,
    /**
     * A {@link Leadership} ended because its participant let go: {@link FencedLeaderElection#stepDown()} or
     * {@link FencedLeaderElection#close()} was called, or its {@link LeadershipTask} returned. Never a
     * plain lock's: a lock's holder lets go with {@link Lease#close()}, which is {@link #RELEASED}.
     */
    STEPPED_DOWN,
    /**
     * The lease was closed: {@link Lease#close()} on this lease, or, for a lease a {@link
     * FencedLockListener} was given, on the last of the holder's re-entrant leases. A lease that had
     * already lost its lock keeps that cause when it is closed.
     */
    RELEASED
}
