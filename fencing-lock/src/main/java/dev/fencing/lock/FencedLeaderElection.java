package dev.fencing.lock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * One participant in a leader election whose every term carries a fence token, strictly greater than
 * every earlier term's: the term's token comes from the participant's claim as a lock's does. With
 * ZooKeeper the recipe is Curator's {@code LeaderSelector}: each participant of a candidacy creates an
 * ephemeral sequential node under the election path (its data is the participant id), the lowest node
 * leads, and each other participant watches only the node before its own.
 *
 * <p>Why the token: a leader can pause (GC, a frozen VM) long enough for its session or lease to expire and
 * another participant to be elected, then resume still believing it leads. No election can stop its
 * next write; the resource can, by refusing the older term's token.
 *
 * <pre>
 *  leader A:  term 7 ... paused ......................... write(token 7) -> REFUSED
 *  lock service:          A's session expires -> B elected
 *  leader B:                          term 9  write(token 9) -> stored 9
 * </pre>
 *
 * <p>Two styles:
 *
 * <pre>{@code
 * FencedLeaderElection election = locks.election("/elections/ledger-writer", "host-a");
 * // blocking: a loop that leads while it can and joins again after each term
 * while (running) {
 *     Leadership term = election.awaitLeadership();
 *     while (term.isValid()) {
 *         ledger.append(nextBatch(), term.token());           // a deposed leader's writes are refused
 *     }
 * }
 * // callback: run while leader, interrupted when the term ends; the future tells why it ended
 * CompletableFuture<LeaseLoss> over = election.lead(leadership -> ledger.runAppender(leadership.token()));
 * }</pre>
 *
 * <p>Rules:
 *
 * <ul>
 *   <li>A term ends for good on a lost connection, an ended session or lease, a pause of this JVM longer
 *       than the pause tolerance (the rules of a {@link Lease}), on {@link #stepDown()} or {@link
 *       #close()}, when the task returns, or when the lock factory closes. Ending marks the term invalid
 *       first, then interrupts the participant's thread (so the task sees it), tells the {@link
 *       FencedLockListener} (for connection events and pauses), and deletes the participant's claim so
 *       that the next participant takes over.
 *   <li>Joining is explicit: after a term ends the participant is out of the election until {@link
 *       #awaitLeadership()} or {@link #lead} joins it again; it never comes back as leader on its own.
 *   <li>A participant has at most one candidacy: {@code awaitLeadership} joins one if there is none, or
 *       waits for the one there is (also one started by {@code lead}).
 *   <li>A grant that is invalid at once (a disruption between creating the node and being elected) is no
 *       term: the node is released and the participant keeps contending.
 * </ul>
 *
 * <p>The participant's thread is its own (with ZooKeeper, {@code fenced-election-<path>-<id>}): it makes,
 * waits on and deletes the participant's claim, and runs the task. Thread-safe. An election path is an
 * exclusive lock's path too: a {@link FencedLock} on it contends with the participants; a {@link
 * FencedReadWriteLock} on it is refused.
 */
public interface FencedLeaderElection extends AutoCloseable {

    /** The election path (with ZooKeeper, the participants' nodes are its children). */
    String path();

    /** This participant's id, stored with its claim, as {@link #currentLeaderId()} reads it. */
    String participantId();

    /**
     * Joins the election if this participant is not a candidate, and blocks until it leads.
     *
     * @return the term, valid when returned
     * @throws LockInterruptedException if interrupted while waiting (the candidacy goes on; the interrupt
     *     flag is set again)
     * @throws IllegalStateException if the participant stepped down or was closed meanwhile
     * @throws FencedLockException if the lock service failed beyond the client's retry policy, or the
     *     path is refused (with ZooKeeper, {@code ForeignLockParentException})
     */
    Leadership awaitLeadership();

    /**
     * Like {@link #awaitLeadership()}, for at most {@code timeout}.
     *
     * @return the term, or empty if not elected within the timeout: the candidacy goes on, and a later
     *     call waits for the same one (call {@link #stepDown()} to leave)
     * @throws IllegalArgumentException if the timeout is null, zero or negative
     */
    Optional<Leadership> awaitLeadership(Duration timeout);

    /**
     * Joins the election and returns at once; when elected, runs {@code task} on the participant's
     * thread, and interrupts it when the term ends.
     *
     * @return completes when the candidacy is over: with why the term ended ({@link
     *     LeaseLoss#STEPPED_DOWN} when the task returned or the participant stepped down), with {@code
     *     null} if it stepped down before it was elected, or exceptionally with what the task threw or
     *     with the lock service's failure that ended the candidacy
     * @throws IllegalStateException if this participant is already a candidate, or is closed
     */
    CompletableFuture<LeaseLoss> lead(LeadershipTask task);

    /** Whether this participant leads now, with a valid term. */
    boolean isLeader();

    /** The current term while it is valid. */
    Optional<Leadership> leadership();

    /**
     * The id of the participant whose claim comes first, as the lock service has it now (with ZooKeeper,
     * a read of the election's children and of that node): empty when nobody takes part. The leader's own
     * view may lag this by the time its watch takes.
     *
     * @throws LockAcquisitionException if the lock service cannot be read
     */
    Optional<String> currentLeaderId();

    /**
     * Leaves the election: ends the current term (marked invalid at once, with {@link
     * LeaseLoss#STEPPED_DOWN}), deletes this participant's claim so the next one takes over without
     * waiting for a session or lease to expire, and interrupts the participant's thread. A candidacy that was not
     * elected yet is withdrawn. Does nothing when not a candidate. Returns without waiting for the task
     * to finish: it is interrupted, and its term is invalid.
     */
    void stepDown();

    /** Steps down and refuses to join from then on. Safe to call twice. */
    @Override
    void close();
}
