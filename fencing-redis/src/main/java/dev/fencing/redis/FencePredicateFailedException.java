package dev.fencing.redis;

import dev.fencing.redis.internal.FencedKeys;

/**
 * The token was fresh enough but the guard of a counter write (such as {@code stock - qty >= 0}) was
 * false, so nothing was written. The throwing twin of {@link WriteOutcome.PredicateFailed}.
 *
 * <pre>{@code
 * try {
 *     redis.decrementBy("{sku-42}:stock", 3, lease.token());
 * } catch (FencePredicateFailedException e) {
 *     return Reservation.OUT_OF_STOCK;
 * }
 * }</pre>
 */
public final class FencePredicateFailedException extends FencingRedisException {
    private static final long serialVersionUID = 1L;

    private final long storedToken;
    private final long currentValue;

    public FencePredicateFailedException(String key, long storedToken, long token, long currentValue) {
        super(
                "the guard was false on Redis key " + FencedKeys.shown(key) + " (value " + currentValue
                        + ", stored token " + storedToken + ", offered token " + token + "); nothing was written",
                key,
                token,
                null);
        this.storedToken = storedToken;
        this.currentValue = currentValue;
    }

    public long storedToken() {
        return storedToken;
    }

    /** The counter's value when the guard was checked. */
    public long currentValue() {
        return currentValue;
    }
}
