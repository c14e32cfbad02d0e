package dev.fencing.spring.internal;

import java.time.Duration;

/**
 * The wait that gives a lock exactly one attempt, for callers that skip rather than wait: Curator's recipe
 * creates the contender's node and, unless it is the first, deletes it again before it looks at the clock.
 * ({@code FencedLock.tryAcquire} refuses a zero timeout.)
 */
public final class OneAttempt {
    public static final Duration WAIT = Duration.ofNanos(1);

    private OneAttempt() {}
}
