package dev.fencing.lock;

/**
 * One term of one leader: the participant that was elected, and the term's fence token, strictly
 * greater than the token of every earlier term of the same election (from the same {@link
 * TokenSource}; with {@link TokenSource#SEQUENCE}, also across deletions of the election's parent, as
 * for {@link FencedLock}). Resources fence on it exactly as on a lock's token: a deposed leader's late
 * writes under its old term's token are refused once the next leader has written.
 *
 * <p>A term ends for good, and a check of {@link #isValid()} that <em>begins</em> after the event answers
 * {@code false}: when this JVM paused longer than the pause tolerance; when the connection is SUSPENDED or
 * the session LOST, however Curator learned of it (also when it replaced its ZooKeeper handle, which
 * closes the old session before Curator reports LOST, and when the Curator client was closed); when the
 * participant steps down or its task returns; or when the {@link FencedLocks} close. These are the rules
 * of a {@link Lease}, with the same limits: a pause that has not ended yet cannot be seen, which is why the
 * resource checks the token. A participant that wants to lead again joins again, and if elected gets a new
 * term with a greater token.
 *
 * <p>Thread-safe: any thread may read the token and check the term.
 */
public interface Leadership extends FencedGrant {

    /** The id of the participant that leads in this term. */
    String participantId();
}
