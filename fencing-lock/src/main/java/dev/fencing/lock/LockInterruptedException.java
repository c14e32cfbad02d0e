package dev.fencing.lock;

/**
 * The thread was interrupted while waiting for a lock or talking to the lock service about one; its interrupt
 * flag is set again, and a lease involved is left as it was.
 */
public class LockInterruptedException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public LockInterruptedException(String lockPath, InterruptedException cause) {
        super("interrupted while acquiring lock " + lockPath, lockPath, 0, cause);
    }

    public LockInterruptedException(String message, String lockPath, long token, InterruptedException cause) {
        super(message, lockPath, token, cause);
    }
}
