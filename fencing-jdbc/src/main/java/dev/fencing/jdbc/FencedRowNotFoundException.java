package dev.fencing.jdbc;

/**
 * No row has the key, so the fenced update changed nothing. The throwing twin of {@link
 * WriteOutcome.NotFound}.
 *
 * <pre>{@code
 * try {
 *     writer.update(update, token);
 * } catch (FencedRowNotFoundException e) {
 *     writer.upsert(insertInstead, token);
 * }
 * }</pre>
 */
public final class FencedRowNotFoundException extends FencedJdbcException {
    private static final long serialVersionUID = 1L;

    public FencedRowNotFoundException(String table, Object key, long token) {
        super(
                "no row in " + table + " has key " + key + " (offered token " + token + "); nothing was written",
                table,
                key,
                token,
                null);
    }
}
