package dev.fencing.jdbc;

/**
 * What happened to one fenced write. A stale write is an expected outcome, not an error, so the {@code
 * try...} methods of {@link FencedWriter} return one of these; the throwing methods turn every outcome
 * but {@link Applied} into the matching {@link FencedJdbcException}.
 *
 * <pre>{@code
 * WriteOutcome outcome = writer.tryUpdate(decrement, lease.token());
 * if (outcome instanceof WriteOutcome.Rejected rejected) {
 *     log.info("a newer holder (token {}) owns {} now", rejected.storedToken(), "A-1");
 * }
 * }</pre>
 *
 * All four are told apart by the write's own statement (it reports the row's token and whether the
 * extra predicate held), never by a separate read before the write.
 */
public sealed interface WriteOutcome {

    /** The token the write was offered under. */
    long offeredToken();

    /** {@code true} only for {@link Applied}. */
    default boolean isApplied() {
        return this instanceof Applied;
    }

    /** The write took effect; the row now carries {@link #offeredToken()}. */
    record Applied(long offeredToken) implements WriteOutcome {}

    /**
     * The row carries a token the policy does not let {@link #offeredToken()} overwrite: a newer lock
     * holder has written it (or the same one, under STRICT). Nothing was changed.
     */
    record Rejected(long storedToken, long offeredToken) implements WriteOutcome {
        /**
         * {@code true} when the stored token is far above the offered one (more than double it and at
         * least 100 above): rather than a holder that merely paused, the token source itself probably went
         * backwards, for example because a lock's parent node was deleted and its sequence restarted.
         * Every write is then refused until the source passes the stored token.
         */
        public boolean tokensWentBackwards() {
            return storedToken - offeredToken > Math.max(100L, offeredToken);
        }
    }

    /** No row has the key. Nothing was changed. */
    record NotFound(long offeredToken) implements WriteOutcome {}

    /**
     * The token would have been accepted but an extra predicate of the update (such as {@code stock >=
     * :qty}) was false. Nothing was changed.
     */
    record PredicateFailed(long storedToken, long offeredToken) implements WriteOutcome {}
}
