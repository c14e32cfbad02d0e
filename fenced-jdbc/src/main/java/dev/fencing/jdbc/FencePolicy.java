package dev.fencing.jdbc;

/**
 * How a write's token must compare with the token stored on the row for PostgreSQL to apply it. The
 * comparison is part of the write's own statement, so no other writer can slip in between the check and
 * the write.
 *
 * <pre>{@code
 * FencedWriter writer = FencedWriter.builder(jdbi).policy(FencePolicy.MONOTONIC).build();
 * }</pre>
 */
public enum FencePolicy {
    /**
     * {@code last_fence_token < :token} (the default): a token writes a given row at most once, so even a
     * holder replaying its own write is refused. Use it when each lock grant makes one change per row.
     */
    STRICT("<"),
    /**
     * {@code last_fence_token <= :token}: the holder may write the same row again under the same token
     * (several changes within one grant); an older token is still refused.
     */
    MONOTONIC("<=");

    private final String operator;

    FencePolicy(String operator) {
        this.operator = operator;
    }

    /** The SQL comparison between the stored token (left) and the offered token (right). */
    public String operator() {
        return operator;
    }

    /** Whether a write under {@code offered} passes this policy against {@code stored}. */
    public boolean admits(long stored, long offered) {
        return this == STRICT ? stored < offered : stored <= offered;
    }
}
