package dev.fencing;

/**
 * Root of every failure the toolkit throws, in every module: the lock client's, fencing-jdbc's and
 * fencing-kafka's exceptions all extend it. Unchecked. Carries the resource involved (a lock path, a table
 * and key, a topic and key) and the token, where known, and keeps its cause.
 *
 * <p>A write refused because its token is stale is not a failure: the non-throwing calls return it as an
 * outcome. Only the throwing twins ({@code update()}, {@code ensureValid()}) raise it, as a subclass of this.
 *
 * <pre>{@code
 * try {
 *     writer.update(reserve, lease.token());
 * } catch (FencingException e) {
 *     log.warn("fenced write to {} under token {} failed", e.resource(), e.token(), e);
 * }
 * }</pre>
 */
public abstract class FencingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long token;

    protected FencingException(String message, String resource, long token, Throwable cause) {
        super(message, cause);
        this.resource = resource;
        this.token = token;
    }

    /** The resource involved, as text (a lock path, a table and key, a topic and key), or {@code null}. */
    public String resource() {
        return resource;
    }

    /** The token involved, or 0 when none applies. */
    public long token() {
        return token;
    }
}
