package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLockException;

/**
 * The lock's sequence counter (its parent's 32-bit count of child creates) is near its wrap, after which
 * ZooKeeper would hand out negative and then repeating numbers, or its token base (the parent's marker, or
 * the history a deleted parent is created again from) is so high that a token or the next base would pass
 * {@code Long.MAX_VALUE}, as only a base written by hand or restored corrupted can be; no token was issued,
 * the lock node was released, and the message names the lock path and the value. Move the lock to
 * a new path whose tokens start above every stored token, or use {@link TokenSource#ZXID} on a new path
 * (a ZXID lock refuses a SEQUENCE lock's parent).
 */
public class FenceTokenExhaustedException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public FenceTokenExhaustedException(String message, String lockPath) {
        super(message, lockPath, 0, null);
    }
}
