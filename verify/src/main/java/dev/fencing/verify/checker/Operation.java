package dev.fencing.verify.checker;

/**
 * One operation of the workload as its client's history tells it: an append of its id to a resource's list
 * under a fence token, and, if the append was acknowledged, the publish of a record carrying the id.
 *
 * @param id the operation's id, unique in the run
 * @param client the client that ran it
 * @param resource the resource's key (row and record key)
 * @param token the fence token of the lock grant it ran under
 * @param path how the client wrote ({@code update}, {@code upsert}, {@code batch}, {@code claim}, {@code plain})
 * @param invokeTime when the append was invoked, epoch ms
 * @param outcome how the append completed; {@link Outcome#INFO} also when no completion was recorded
 * @param completeTime when it completed, or -1 when no completion was recorded
 * @param error the client's reason for {@code fail} and {@code info}, else null
 * @param publish the publish of its record, or null when none was invoked
 */
public record Operation(
        long id,
        int client,
        String resource,
        long token,
        String path,
        long invokeTime,
        Outcome outcome,
        long completeTime,
        String error,
        Publish publish) {

    /**
     * The publish of an operation's record.
     *
     * @param stamped whether the record carried the token header (an unstamped one must never be applied by a
     *     fenced consumer)
     * @param invokeTime when the send began, epoch ms
     * @param outcome {@link Outcome#OK} when Kafka acknowledged it
     * @param completeTime when it completed, or -1 when no completion was recorded
     * @param partition the partition Kafka acknowledged, or null
     * @param offset the offset Kafka acknowledged, or null
     * @param error the client's reason when it did not complete ok, else null
     */
    public record Publish(
            boolean stamped,
            long invokeTime,
            Outcome outcome,
            long completeTime,
            Integer partition,
            Long offset,
            String error) {

        /** Acknowledged by Kafka. */
        public boolean acknowledged() {
            return outcome == Outcome.OK;
        }
    }

    /** The append was acknowledged (committed). */
    public boolean acknowledged() {
        return outcome == Outcome.OK;
    }

    /** "op 3000017 (client 3, r2, token 45)": how violations name an operation. */
    public String describe() {
        return "op " + id + " (client " + client + ", " + resource + ", token " + token + ")";
    }
}
