package dev.fencing.redis;

import dev.fencing.FencingException;

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
        super(message, key == null ? null : "Redis key " + key, token, cause);
        this.key = key;
    }

    /** The fenced Redis key, or {@code null} when none applies. */
    public String key() {
        return key;
    }
}
