package dev.fencing.spring;

import dev.fencing.lock.FencedLockException;
import dev.fencing.lock.LockAcquisitionException;
import java.time.Duration;

/**
 * A {@link FencedLocked} method with a {@link FencedLocked#timeout()} did not get its lock in time because another
 * holder kept it; the method did not run. (With {@link FencedLocked#skipIfLocked()} the call is skipped instead,
 * without this.) A lock that could not be taken because ZooKeeper failed is a {@link LockAcquisitionException}
 * instead; both are {@link FencedLockException}s, so one catch takes either.
 */
public final class LockTimeoutException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    private final Duration timeout;

    public LockTimeoutException(String lockPath, Duration timeout) {
        super(
                "lock " + lockPath + " was not granted within " + timeout
                        + ": another holder kept it; the method did not run",
                lockPath,
                0,
                null);
        this.timeout = timeout;
    }

    /** How long the call waited. */
    public Duration timeout() {
        return timeout;
    }
}
