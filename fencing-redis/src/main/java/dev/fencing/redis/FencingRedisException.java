package dev.fencing.redis;

import dev.fencing.FencingException;
import dev.fencing.redis.internal.FencedKeys;

/**
 * Root of everything fencing-redis throws (unchecked). Carries the Redis key and the token involved, where
 * known, and keeps its cause.
 *
 * <pre>{@code
 * try {
 *     redis.set("{order-7}:state", "PAID", lease.token());
 * } catch (StaleFenceException e) {
 *     // a newer holder wrote the key: stop, do not retry with the same token
 * } catch (FencingRedisException e) {
 *     log.warn("fenced write to {} failed", e.key(), e);
 * }
 * }</pre>
 */
public abstract class FencingRedisException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final String key;

    protected FencingRedisException(String message, String key, long token, Throwable cause) {
        super(message, key == null ? null : "Redis key " + FencedKeys.shown(key), token, cause);
        this.key = key;
    }

    /**
     * The fenced Redis key, whole, or {@code null} when none applies. The message and {@link #resource()} show a
     * key over 200 UTF-8 bytes by its start, its size and the start of its SHA-1 (see {@code docs/redis.md}).
     */
    public String key() {
        return key;
    }
}
