package dev.fencing.jdbc;

import dev.fencing.FencingException;

/**
 * Root of everything fencing-jdbc throws (unchecked). Carries the table, the row or resource key and the
 * token involved, where known, and keeps its cause.
 *
 * <pre>{@code
 * try {
 *     writer.update(decrement, token);
 * } catch (StaleFenceException e) {
 *     // a newer holder wrote the row: stop, do not retry with the same token
 * } catch (FencedJdbcException e) {
 *     log.warn("write to {} key {} failed", e.table(), e.key(), e);
 * }
 * }</pre>
 */
public abstract class FencedJdbcException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final String table;
    private final String key;

    protected FencedJdbcException(String message, String table, Object key, long token, Throwable cause) {
        super(message, table == null ? null : key == null ? table : table + " key " + key, token, cause);
        this.table = table;
        this.key = key == null ? null : key.toString();
    }

    /** The qualified table name (or {@code fencing.watermark}), or {@code null} when none applies. */
    public String table() {
        return table;
    }

    /** The row key or watermark resource key as text, or {@code null} when none applies. */
    public String key() {
        return key;
    }
}
