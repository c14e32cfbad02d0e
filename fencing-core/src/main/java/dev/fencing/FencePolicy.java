package dev.fencing;

/**
 * How a write's token must compare with the newest token a resource has accepted for the write to be
 * applied. The same two policies hold for every fenced resource: a PostgreSQL row ({@code fencing-jdbc}), a
 * Kafka key ({@code fencing-kafka}), a watermark. Immutable, thread-safe.
 *
 * <pre>{@code
 * FencePolicy.STRICT.admits(7, 8);    // true: a newer grant
 * FencePolicy.STRICT.admits(8, 8);    // false: a token writes a resource at most once
 * FencePolicy.MONOTONIC.admits(8, 8); // true: the same grant may write again
 * }</pre>
 */
public enum FencePolicy {
    /**
     * The offered token must be greater than the stored one: a token writes a given resource at most once,
     * so even a holder replaying its own write is refused. Use it when each grant makes one change per
     * resource.
     */
    STRICT,
    /**
     * The offered token must be at least the stored one: the holder may write the same resource again under
     * the same token (several changes within one grant); an older token is still refused.
     */
    MONOTONIC;

    /** Whether a write under {@code offered} passes this policy against the {@code stored} token. */
    public boolean admits(long stored, long offered) {
        return this == STRICT ? stored < offered : stored <= offered;
    }
}
