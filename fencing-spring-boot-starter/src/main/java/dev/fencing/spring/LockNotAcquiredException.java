package dev.fencing.spring;

import dev.fencing.FencingException;
import java.time.Duration;

/**
 * A {@link FencedLocked} method with a {@link FencedLocked#timeout()} did not get its lock in time; the
 * method did not run. (With {@link FencedLocked#skipIfLocked()} the call is skipped instead, without this.)
 */
public final class LockNotAcquiredException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final Duration timeout;

    public LockNotAcquiredException(String lockPath, Duration timeout) {
        super(
                "lock " + lockPath + " was not granted within " + timeout
                        + ": another holder kept it; the method did not run",
                lockPath,
                0,
                null);
        this.timeout = timeout;
    }

    public Duration timeout() {
        return timeout;
    }
}
