package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLockException;

/**
 * The lock's sequence counter (its parent's 32-bit count of child creates) is near its wrap, after which
 * ZooKeeper would hand out negative and then repeating numbers; no token was issued. Move the lock to
 * a new path whose tokens start above every stored token, or use {@link TokenSource#ZXID} on a new path
 * (a ZXID lock refuses a SEQUENCE lock's parent).
 */
public class FenceTokenExhaustedException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public FenceTokenExhaustedException(String message, String lockPath) {
        super(message, lockPath, 0, null);
    }
}
