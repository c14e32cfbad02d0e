package dev.fencing.lock.internal;

import dev.fencing.lock.FenceTokenExhaustedException;

/** Turns a lock node's name into a SEQUENCE fence token. */
public final class SequenceTokens {
    static final String LOCK_NAME = "lock-";

    private SequenceTokens() {}

    /**
     * The token for a lock node: its parent's base (see {@link LockParents}) plus its sequence number.
     * The marker is always the first child of a library-made parent, so it takes sequence 0 and the
     * first lock node gets 1: with base 0, the token is the sequence number, and never 0, which
     * protected resources store as "never written".
     *
     * @throws FenceTokenExhaustedException when the sequence is negative (wrapped) or within {@code
     *     wrapMargin} of {@code Integer.MAX_VALUE}
     */
    public static long token(String lockPath, String nodePath, long base, int wrapMargin) {
        int at = nodePath.lastIndexOf(LOCK_NAME);
        if (at < 0) {
            throw new IllegalStateException("lock node " + nodePath + " has no '" + LOCK_NAME + "' sequence suffix");
        }
        String digits = nodePath.substring(at + LOCK_NAME.length());
        long sequence;
        try {
            sequence = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(
                    "lock node " + nodePath + " has an unreadable sequence '" + digits + "'", e);
        }
        long limit = (long) Integer.MAX_VALUE - wrapMargin;
        if (sequence < 0 || sequence > limit) {
            throw new FenceTokenExhaustedException(
                    "lock " + lockPath + " has used its sequence counter up to " + sequence
                            + ", within " + wrapMargin + " events of the 32-bit wrap at " + Integer.MAX_VALUE
                            + "; after the wrap ZooKeeper would hand out negative and repeating numbers, so no"
                            + " token was issued. Move the lock to a new path (make sure its tokens start above"
                            + " every stored token) or use TokenSource.ZXID",
                    lockPath);
        }
        return Math.addExact(base, sequence);
    }
}
