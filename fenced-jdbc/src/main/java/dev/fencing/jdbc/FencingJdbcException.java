package dev.fencing.jdbc;

/**
 * Root of everything fenced-jdbc throws (unchecked). Carries the table, the row or resource key and the
 * token involved, where known, and keeps its cause.
 *
 * <pre>{@code
 * try {
 *     writer.update(decrement, token);
 * } catch (StaleFenceException e) {
 *     // a newer holder wrote the row: stop, do not retry with the same token
 * } catch (FencingJdbcException e) {
 *     log.warn("write to {} key {} failed", e.table(), e.key(), e);
 * }
 * }</pre>
 */
public abstract class FencingJdbcException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String table;
    private final String key;
    private final long token;

    protected FencingJdbcException(String message, String table, Object key, long token, Throwable cause) {
        super(message, cause);
        this.table = table;
        this.key = key == null ? null : key.toString();
        this.token = token;
    }

    /** The qualified table name (or {@code fencing.watermark}), or {@code null} when none applies. */
    public String table() {
        return table;
    }

    /** The row key or watermark resource key as text, or {@code null} when none applies. */
    public String key() {
        return key;
    }

    /** The offered token, or 0 when none applies. */
    public long token() {
        return token;
    }
}
