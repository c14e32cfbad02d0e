package dev.fencing.lock;

/**
 * A lock could not be acquired because the lock service (ZooKeeper, etcd) failed (not because another
 * holder has it: a timed wait that another holder outlasts answers empty, or, in the Spring starter,
 * throws its {@code LockTimeoutException}).
 */
public class LockAcquisitionException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public LockAcquisitionException(String message, String lockPath, Throwable cause) {
        super(message, lockPath, 0, cause);
    }
}
