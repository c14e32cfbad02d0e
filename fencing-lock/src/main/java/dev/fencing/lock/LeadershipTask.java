package dev.fencing.lock;

/**
 * What a participant does while it leads: started on the participant's own thread when it is elected,
 * interrupted when its leadership ends (a lost connection, an ended session or lease, a detected pause
 * of this JVM, {@link FencedLeaderElection#stepDown()}). Returning ends the leadership and hands it on.
 *
 * <pre>{@code
 * election.lead(leadership -> {
 *     while (!Thread.currentThread().isInterrupted()) {
 *         ledger.append(nextBatch(), leadership.token());     // fenced: a deposed leader's writes are refused
 *     }
 * });
 * }</pre>
 */
@FunctionalInterface
public interface LeadershipTask {

    /**
     * Works as leader, writing under {@code leadership.token()}.
     *
     * @throws InterruptedException when interrupted because the leadership ended: this is how a task
     *     usually ends
     */
    void lead(Leadership leadership) throws InterruptedException;
}
