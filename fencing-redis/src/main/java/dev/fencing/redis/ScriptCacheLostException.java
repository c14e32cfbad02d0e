package dev.fencing.redis;

import dev.fencing.redis.internal.FencedKeys;

/**
 * A pipelined write was answered {@code NOSCRIPT} (Redis lost its script cache: a restart, a failover to a replica,
 * {@code SCRIPT FLUSH}) after the writer had sent other fenced writes behind it, so it was NOT applied: on one
 * connection those have run already, and sending it again as {@code EVAL} then would run it after them, out of the
 * order sent (a delete sent before a set deleting the set's value). On a Redis Cluster they may have gone to another
 * node, and run there or not yet; the writer does not tell the two apart and refuses the resend alike. Nothing was
 * written and the token was not raised; it may be retried: the script was
 * loaded again ({@code SCRIPT LOAD}, on the node of the key; on a cluster, on every node) before this was thrown, so
 * the retry, and every write sent after it, finds it. A write answered {@code NOSCRIPT} with nothing sent behind it
 * is sent again as {@code EVAL} and does not fail. A write answered {@code NOSCRIPT} once the connection is inside the caller's {@code MULTI}
 * fails so too ({@link #insideMulti}), neither sent again nor its script loaded: either would join that transaction.
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
        this(
                key,
                token,
                cause,
                "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                        + " was NOT applied: Redis had lost its script cache (a restart, a failover, SCRIPT FLUSH)"
                        + " and answered NOSCRIPT after this writer had sent other fenced writes behind it (on one"
                        + " connection they have run already; on a Redis Cluster they may have gone to another node);"
                        + " sending it again could run it after them, out of order. Nothing was written; it may be"
                        + " retried");
    }

    private ScriptCacheLostException(String key, long token, Throwable cause, String message) {
        super(message, key, token, cause);
    }

    /**
     * The write was answered {@code NOSCRIPT} when the connection had entered the caller's {@code MULTI} after it
     * was sent: sent again now, it would be queued in the caller's transaction (and its result among the
     * transaction's), so it is not. It may be retried outside the transaction.
     */
    public static ScriptCacheLostException insideMulti(String op, String key, long token, Throwable cause) {
        return new ScriptCacheLostException(
                key,
                token,
                cause,
                "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                        + " was NOT applied: Redis had lost its script cache (a restart, a failover, SCRIPT FLUSH)"
                        + " and answered NOSCRIPT when the connection was inside MULTI; sending it again would queue"
                        + " it in that transaction. Nothing was written; it may be retried after EXEC or DISCARD");
    }
}
