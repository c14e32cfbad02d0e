package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.zookeeper.FenceTokenExhaustedException;

/** Turns a lock node's name into a SEQUENCE fence token. */
public final class SequenceTokens {
    static final String LOCK_NAME = "lock-";

    private SequenceTokens() {}

    /**
     * The token for a lock node: its parent's base (see {@link LockParents}) plus its sequence number
     * plus 1. With base 0 this is the earlier fencing-zookeeper's formula, so a client of either version on the
     * same parent hands out strictly increasing tokens in node order, and never 0, which protected
     * resources store as "never written". The marker is the first child of a library-made parent and
     * takes sequence 0, so the first grant of a fresh lock gets token 2.
     *
     * @throws FenceTokenExhaustedException when the sequence is negative (wrapped) or within {@code
     *     wrapMargin} of {@code Integer.MAX_VALUE}
     */
    public static long token(String lockPath, String nodePath, long base, int wrapMargin) {
        return token(lockPath, nodePath, LOCK_NAME, base, wrapMargin);
    }

    /** The same for a node named {@code nodeName} + sequence: a read/write lock's {@code __READ__} or {@code __WRIT__}. */
    static long token(String lockPath, String nodePath, String nodeName, long base, int wrapMargin) {
        int at = nodePath.lastIndexOf(nodeName);
        if (at < 0) {
            throw new IllegalStateException("lock node " + nodePath + " has no '" + nodeName + "' sequence suffix");
        }
        String digits = nodePath.substring(at + nodeName.length());
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
                            + " every stored token) or use TokenSource.ZXID on a new path",
                    lockPath);
        }
        return Math.addExact(Math.addExact(base, sequence), 1);
    }
}
