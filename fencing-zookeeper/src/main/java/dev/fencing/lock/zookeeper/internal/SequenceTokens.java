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
     *     wrapMargin} of {@code Integer.MAX_VALUE}, or when the token would pass {@code Long.MAX_VALUE} (a
     *     base set by hand or restored corrupted): a wrapped token would be negative, so none is issued
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
        if (base > Long.MAX_VALUE - 1 - sequence) {
            throw new FenceTokenExhaustedException(
                    "lock " + lockPath + " has token base " + base + " (its parent's marker " + LockParents.marker(base)
                            + "): base + sequence " + sequence + " + 1 would pass Long.MAX_VALUE, so no token"
                            + " was issued. The marker or its history was set by hand or restored corrupted;"
                            + " move the lock to a new path (make sure its tokens start above every stored"
                            + " token) or use TokenSource.ZXID on a new path",
                    lockPath);
        }
        return base + sequence + 1;
    }
}
