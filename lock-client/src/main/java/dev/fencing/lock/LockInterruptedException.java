package dev.fencing.lock;

/** The thread was interrupted while waiting for a lock; its interrupt flag is set again. */
public class LockInterruptedException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public LockInterruptedException(String lockPath, InterruptedException cause) {
        super("interrupted while acquiring lock " + lockPath, lockPath, 0, cause);
    }
}
