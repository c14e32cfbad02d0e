package dev.fencing.redis;

/**
 * What happened to one fenced Redis write. A stale write is an expected outcome, not an error, so the
 * {@code try...} methods of {@link FencedRedis} return one of these; the throwing methods turn every
 * outcome but {@link Applied} into the matching {@link FencingRedisException}.
 *
 * <pre>{@code
 * WriteOutcome outcome = redis.tryDecrementBy("{sku-42}:stock", 3, lease.token());
 * if (outcome instanceof WriteOutcome.Rejected rejected) {
 *     log.info("a newer holder (token {}) owns sku-42 now", rejected.storedToken());
 * } else if (outcome instanceof WriteOutcome.PredicateFailed failed) {
 *     log.info("only {} left", failed.currentValue());
 * }
 * }</pre>
 *
 * All three are decided by the one Lua script that also writes, never by a read before the write.
 */
public sealed interface WriteOutcome {

    /** The token the write was offered under. */
    long offeredToken();

    /** {@code true} only for {@link Applied}. */
    default boolean isApplied() {
        return this instanceof Applied;
    }

    /**
     * The write took effect; the key's token is now {@link #offeredToken()}.
     *
     * @param previousToken the token stored before this write, 0 for a key never written under a fence
     * @param reply what the write returned: the new value of a counter ({@code Long}), the number of keys
     *     deleted ({@code Long}), the reply of a user script's body as Lettuce decodes it ({@code Long},
     *     {@code String}, {@code List}, or {@code null}); {@code null} for a set
     * @param replicasAcknowledged with {@link FencedRedis.Builder#waitForReplicas}: how many replicas had
     *     this write (and everything before it on the connection) when {@code WAIT} returned, which may be
     *     fewer than asked; {@value #NOT_ASKED} when the writer does not wait for replicas
     */
    record Applied(long offeredToken, long previousToken, Object reply, int replicasAcknowledged)
            implements WriteOutcome {
        /** {@link #replicasAcknowledged()} of a writer that does not wait for replicas. */
        public static final int NOT_ASKED = -1;

        /** An applied write of a writer that does not wait for replicas. */
        public Applied(long offeredToken, long previousToken, Object reply) {
            this(offeredToken, previousToken, reply, NOT_ASKED);
        }
    }

    /**
     * The key carries a token the policy does not let {@link #offeredToken()} overwrite: a newer lock holder
     * has written it (or the same one, under STRICT). Nothing was changed.
     */
    record Rejected(long storedToken, long offeredToken) implements WriteOutcome {
        /**
         * {@code true} when the stored token is far above the offered one (more than double it and at
         * least 100 above): rather than a holder that merely paused, the token source itself probably went
         * backwards. Every write is then refused until the source passes the stored token.
         */
        public boolean tokensWentBackwards() {
            return storedToken - offeredToken > Math.max(100L, offeredToken);
        }
    }

    /**
     * The token would have been accepted but the guard of a counter write (such as {@code stock - qty >=
     * 0}) was false. Nothing was changed, not even the token.
     *
     * @param currentValue the counter's value when the guard was checked (0 for a missing key)
     */
    record PredicateFailed(long storedToken, long offeredToken, long currentValue) implements WriteOutcome {}
}
