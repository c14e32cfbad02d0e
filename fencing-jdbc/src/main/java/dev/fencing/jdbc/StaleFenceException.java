package dev.fencing.jdbc;

import dev.fencing.FencePolicy;

/**
 * The write was refused because the row (or watermark) carries a token the {@link FencePolicy} does not
 * let the offered token overwrite: a newer lock holder has written it, or (stored equal to offered, under
 * {@link FencePolicy#STRICT}) this token already has, perhaps in an earlier attempt of the same write.
 * Nothing was changed by this attempt; retrying with the same token cannot succeed. The throwing twin of {@link WriteOutcome.Rejected}.
 *
 * <pre>{@code
 * try {
 *     writer.update(update, token);
 * } catch (StaleFenceException e) {
 *     lease.close(); // we are no longer the holder
 * }
 * }</pre>
 */
public final class StaleFenceException extends FencedJdbcException {
    private static final long serialVersionUID = 1L;

    private final long storedToken;

    public StaleFenceException(String table, Object key, long storedToken, long offeredToken, FencePolicy policy) {
        super(message(table, key, storedToken, offeredToken, policy), table, key, offeredToken, null);
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

    private static String message(String table, Object key, long stored, long offered, FencePolicy policy) {
        String base = "stale fence token refused on " + table + " key " + key + ": stored token " + stored
                + ", offered token " + offered + " (policy " + policy + " needs stored "
                + dev.fencing.jdbc.internal.FencedSql.operator(policy)
                + " offered)";
        if (new WriteOutcome.Rejected(stored, offered).tokensWentBackwards()) {
            return base + ". The stored token is far above the offered one: the token source went backwards"
                    + " (for example the lock's parent node was deleted and its sequence restarted), so every"
                    + " write will be refused until tokens pass " + stored + ". Keep lock parents persistent"
                    + " or use a token source that survives that (the lock node's czxid).";
        }
        if (stored == offered) {
            return base + ". This token has already written the row, perhaps in an earlier attempt of this same"
                    + " write whose answer was lost (after a connection failure in autocommit it is unknown"
                    + " whether the write applied): check the row before treating the lock as lost.";
        }
        return base + ". A newer lock holder has written it.";
    }
}
