package dev.fencing.lock;

/**
 * What a lock's grant ({@link Lease}) and a leader's term ({@link Leadership}) have in common: a fence token
 * to pass with every write to a protected resource, and whether this process still knows of nothing that ended
 * the grant. The rules of {@link #isValid()} are the same for both and are listed on {@link Lease}; code that
 * only writes under a token (a fenced writer, a scheduled job) can take either.
 */
public interface FencedGrant {

    /**
     * The fence token: positive, and greater than that of every earlier grant of the same lock or every
     * earlier term of the same election (from the same token source, where a backend offers several).
     */
    long token();

    /** The lock or election path. */
    String path();

    /**
     * Whether the grant still holds as far as this process knows, without asking the server: false for every
     * check that begins after one of the events listed on {@link Lease}. Costs no round trip.
     */
    boolean isValid();

    /** Throws {@link LeaseLostException} if {@link #isValid()} is false. */
    void ensureValid();

    /**
     * Asks the lock service whether the grant's claim (with ZooKeeper, its node) still exists and belongs to
     * this client's session or lease, with a read that a lagging replica cannot answer from stale state (with
     * ZooKeeper, a {@code sync} first). A false answer, or no answer within a session timeout, ends the grant
     * with {@link LeaseLoss#NODE_GONE}; with ZooKeeper, with the cause {@link #isValid()} finds then, if it finds
     * one (a session that ended when Curator replaced its handle, whose close deleted the node, is {@link
     * LeaseLoss#SESSION_LOST}; a connection lost meanwhile, {@link LeaseLoss#CONNECTION_SUSPENDED}). A lease already closed answers false without asking, even while a
     * re-entrant lease of the same thread keeps the lock.
     *
     * @throws LockInterruptedException if interrupted meanwhile: the interrupt flag stays set and the grant is
     *     left as it was
     */
    boolean verify();

    /** Why the grant ended, or {@code null} while it holds; checks as {@link #isValid()} does. */
    LeaseLoss lossCause();
}
