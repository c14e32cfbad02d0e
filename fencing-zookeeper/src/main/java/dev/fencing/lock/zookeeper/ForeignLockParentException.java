package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLockException;

/**
 * A lock's parent node was not made for the lock's token source, so a token from it could be lower
 * than one a resource already stored: a {@link TokenSource#SEQUENCE} lock found no marker child (the
 * parent was not made by this library, its sequence counter may have restarted), or a {@link
 * TokenSource#ZXID} lock found a SEQUENCE lock's marker (a SEQUENCE grant after the zxid token would go
 * backwards). No token was issued and the lock node was released. The message names the path and the
 * ways out.
 */
public class ForeignLockParentException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public ForeignLockParentException(String message, String lockPath) {
        super(message, lockPath, 0, null);
    }
}
