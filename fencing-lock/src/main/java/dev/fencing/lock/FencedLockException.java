package dev.fencing.lock;

import dev.fencing.FencingException;

/**
 * Root of the lock API's failures, for every backend. Unchecked; carries the lock path and, where one exists, the
 * fence token involved, and keeps its cause.
 */
public abstract class FencedLockException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final String lockPath;

    protected FencedLockException(String message, String lockPath, long token, Throwable cause) {
        super(message, lockPath, token, cause);
        this.lockPath = lockPath;
    }

    /** The lock path involved. */
    public String lockPath() {
        return lockPath;
    }
}
