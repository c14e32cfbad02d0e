package dev.fencing.redis;

import dev.fencing.redis.internal.FencedKeys;

/**
 * A pipelined write was answered {@code NOSCRIPT} (Redis lost its script cache: a restart, a failover to a replica,
 * {@code SCRIPT FLUSH}) after writes sent behind it on the same connection had already run, so it was NOT applied:
 * sending it again as {@code EVAL} then would run it after them, out of the order sent (a delete sent before a set
 * deleting the set's value). Nothing was written and the token was not raised; it may be retried: the script was
 * loaded again ({@code SCRIPT LOAD}, on the node of the key) before this was thrown, so the retry, and every write
 * sent after it, finds it. A write answered {@code NOSCRIPT} with nothing sent behind it is sent again as {@code
 * EVAL} and does not fail.
 *
 * <pre>{@code
 * } catch (CompletionException e) {
 *     if (e.getCause() instanceof ScriptCacheLostException lost) {
 *         retry(lost.key());  // not applied: safe to send again, in the order wanted
 *     }
 * }
 * }</pre>
 */
public final class ScriptCacheLostException extends FencedRedisWriteException {
    private static final long serialVersionUID = 1L;

    public ScriptCacheLostException(String op, String key, long token, Throwable cause) {
        super(
                "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                        + " was NOT applied: Redis had lost its script cache (a restart, a failover, SCRIPT FLUSH)"
                        + " and answered NOSCRIPT after writes sent behind it on the same connection had run;"
                        + " sending it again would run it out of order. Nothing was written; it may be retried",
                key,
                token,
                cause);
    }
}
