package dev.fencing.lock;

/**
 * A {@link TokenSource#SEQUENCE} lock's parent node was not made by this library (it has no marker
 * child), so nothing is known about the tokens granted under it before: its sequence counter may have
 * restarted, and a token from it could be lower than one a resource already stored. No token was
 * issued and the lock node was released. The message names the path and the ways out.
 */
public class ForeignLockParentException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    public ForeignLockParentException(String message, String lockPath) {
        super(message, lockPath, 0, null);
    }
}
