package dev.fencing.lock;

/**
 * One term of one leader: the participant that was elected, and the term's fence token, strictly
 * greater than the token of every earlier term of the same election (from the same token source, where
 * a backend offers several; as for {@link FencedLock}). Resources fence on it exactly as on a lock's
 * token: a deposed leader's late writes under its old term's token are refused once the next leader has
 * written.
 *
 * <p>A term ends for good, and a check of {@link #isValid()} that <em>begins</em> after the event answers
 * {@code false}: when this JVM paused longer than the pause tolerance; when the connection to the lock
 * service is lost or the session or lease ends, however the client learned of it (with ZooKeeper, also
 * when Curator replaced its handle or was closed); when the participant steps down or its task returns;
 * or when the backend's lock factory closes. These are the rules
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
