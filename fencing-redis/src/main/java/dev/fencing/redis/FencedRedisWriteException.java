package dev.fencing.redis;

/**
 * Redis failed a fenced write, or refused it as malformed: the key holds a value of another type
 * (WRONGTYPE), its token key holds something that is not a token, a counter is not an integer, the
 * connection failed, no answer came in time. The message names the key. The cause is Lettuce's exception,
 * where there is one.
 *
 * <p>Whether the write took effect is known when Redis answered with an error: the script checks before it
 * writes, so nothing was written, except when the body of a {@link FencedScript} failed after the fence had
 * raised the token, or ran to its end and returned a table holding an error element (Lettuce fails the call
 * on one); then the message says so ("passed the fence and set the key's token to ..."), and the
 * raised token stays, as do the body's writes before its failure (Redis does not roll a script back). It is
 * unknown after a timeout or a lost connection (the script may have run).
 * Lettuce sends a command again after a reconnect when its reply never came; the fence runs such a call
 * again only when the stored token proves that the first run did not apply, and otherwise fails it with this
 * exception (outcome unknown) rather than applying it twice.
 * A {@link ScriptCacheLostException} is one whose write is known not to have applied, and so is one whose message
 * says "NOT sent" (a write that waited the command timeout for an {@code EVAL} of the same writer that a
 * {@code CommandListener} held at its hand-over to Lettuce).
 * Retrying under the same token is safe under {@link dev.fencing.FencePolicy#STRICT}: the write applies at
 * most once.
 *
 * <pre>{@code
 * try {
 *     redis.set("{order-7}:state", "PAID", token);
 * } catch (FencedRedisWriteException e) {
 *     log.warn("fenced write to {} failed: {}", e.key(), e.getMessage());
 * }
 * }</pre>
 */
public class FencedRedisWriteException extends FencingRedisException {
    private static final long serialVersionUID = 1L;

    public FencedRedisWriteException(String message, String key, long token, Throwable cause) {
        super(message, key, token, cause);
    }
}
