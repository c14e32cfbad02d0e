package dev.fencing.lock;

/** The holder used a lease that is no longer valid; stop writing under its token. */
public class LeaseLostException extends FencedLockException {
    private static final long serialVersionUID = 1L;

    private final LeaseLoss cause;

    public LeaseLostException(String lockPath, long token, LeaseLoss cause) {
        super(
                cause == LeaseLoss.RELEASED
                        ? "lease on " + lockPath + " with fence token " + token + " was closed (RELEASED); acquire"
                                + " again to write under a new token"
                        : "lease on " + lockPath + " with fence token " + token + " is no longer valid (" + cause
                                + "); stop writing under it, close it and acquire again",
                lockPath,
                token,
                null);
        this.cause = cause;
    }

    public LeaseLoss lossCause() {
        return cause;
    }
}
