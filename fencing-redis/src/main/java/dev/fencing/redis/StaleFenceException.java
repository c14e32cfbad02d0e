package dev.fencing.redis;

import dev.fencing.FencePolicy;
import dev.fencing.redis.internal.FencedKeys;

/**
 * The write was refused because the key carries a token the {@link FencePolicy} does not let the offered
 * token overwrite: a newer lock holder has written it, or (stored equal to offered, under {@link
 * FencePolicy#STRICT}) this token already has. Nothing was changed; retrying with the same token cannot
 * succeed. The throwing twin of {@link WriteOutcome.Rejected}.
 *
 * <pre>{@code
 * try {
 *     redis.set("{order-7}:state", "PAID", lease.token());
 * } catch (StaleFenceException e) {
 *     lease.close(); // we are no longer the holder
 * }
 * }</pre>
 */
public final class StaleFenceException extends FencingRedisException {
    private static final long serialVersionUID = 1L;

    private final long storedToken;

    public StaleFenceException(String key, long storedToken, long offeredToken, FencePolicy policy) {
        super(message(key, storedToken, offeredToken, policy), key, offeredToken, null);
        this.storedToken = storedToken;
    }

    public long storedToken() {
        return storedToken;
    }

    public long offeredToken() {
        return token();
    }

    /** See {@link WriteOutcome.Rejected#tokensWentBackwards()}. */
    public boolean tokensWentBackwards() {
        return new WriteOutcome.Rejected(storedToken, token()).tokensWentBackwards();
    }

    private static String message(String key, long stored, long offered, FencePolicy policy) {
        String base = "stale fence token refused on Redis key " + FencedKeys.shown(key) + ": stored token " + stored
                + ", offered token " + offered + " (policy " + policy + " needs stored "
                + (policy == FencePolicy.STRICT ? "<" : "<=") + " offered)";
        if (new WriteOutcome.Rejected(stored, offered).tokensWentBackwards()) {
            return base + ". The stored token is far above the offered one: the token source went backwards,"
                    + " so every write will be refused until tokens pass " + stored + ".";
        }
        if (stored == offered) {
            return base + ". This token has already written the key, perhaps in an earlier attempt of this"
                    + " same write whose answer was lost: check the key before treating the lock as lost.";
        }
        return base + ". A newer lock holder has written it.";
    }
}
