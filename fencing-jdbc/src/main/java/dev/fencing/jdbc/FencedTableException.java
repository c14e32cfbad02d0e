package dev.fencing.jdbc;

/**
 * A {@link FencedTable} does not match the database: the table, a key column or the fence column is
 * missing, the fence column is not {@code BIGINT NOT NULL}, or the key columns are not a unique key.
 *
 * <pre>{@code
 * try {
 *     FencedTable.builder().table("inventroy").keyColumns("sku").build(jdbi);
 * } catch (FencedTableException e) {
 *     // "table public.inventroy does not exist"
 * }
 * }</pre>
 */
public final class FencedTableException extends FencedJdbcException {
    private static final long serialVersionUID = 1L;

    public FencedTableException(String table, String message, Throwable cause) {
        super(message, table, null, 0, cause);
    }
}
