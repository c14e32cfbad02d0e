package dev.fencing.spring.internal;

import dev.fencing.spring.LockService;
import java.time.Duration;

/**
 * The wait that gives a lock one attempt, for callers that skip rather than wait. On ZooKeeper it is exactly one:
 * Curator's recipe creates the contender's node and, unless it is the first, deletes it again before it looks at
 * the clock ({@code FencedLock.tryAcquire} refuses a zero timeout, hence a nanosecond). etcd's recipe bounds each
 * of its requests (the contender's lease, its key, the read of its predecessors) by the timeout too, so a
 * nanosecond would never be granted: there the attempt may wait {@link #ETCD}, time for those requests on a
 * loaded cluster, and so also for a holder that releases meanwhile.
 */
public final class OneAttempt {
    /** ZooKeeper's one attempt. */
    public static final Duration WAIT = Duration.ofNanos(1);

    /** Any other lock service's (etcd's): the time its requests to grant a free lock may take. */
    public static final Duration ETCD = Duration.ofSeconds(2);

    private OneAttempt() {}

    /** The wait of one attempt on {@code service}. */
    public static Duration on(LockService service) {
        return service instanceof ZooKeeperLockService ? WAIT : ETCD;
    }
}
