package dev.fencing.spring.internal;

import java.time.Duration;

/**
 * The wait that gives a lock one attempt, for callers that skip rather than wait: a nanosecond, since {@code
 * FencedLock.tryAcquire} refuses a zero timeout. On either backend the requests that contend are made once
 * whatever the timeout (Curator's recipe creates the contender's node and, unless it is the first, deletes it
 * again; etcd's makes the lease, the key and the read of the predecessor), and only the wait for a holder is cut.
 */
public final class OneAttempt {
    /** One attempt. */
    public static final Duration WAIT = Duration.ofNanos(1);

    private OneAttempt() {}
}
