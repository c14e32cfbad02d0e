package dev.fencing.lock;

/**
 * Root of the lock client's failures. Unchecked; carries the lock path and, where one exists, the
 * fence token involved, and keeps its cause.
 */
public abstract class FencedLockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String lockPath;
    private final long token;

    protected FencedLockException(String message, String lockPath, long token, Throwable cause) {
        super(message, cause);
        this.lockPath = lockPath;
        this.token = token;
    }

    /** The lock path involved. */
    public String lockPath() {
        return lockPath;
    }

    /** The fence token involved, or 0 when no token was issued. */
    public long token() {
        return token;
    }
}
