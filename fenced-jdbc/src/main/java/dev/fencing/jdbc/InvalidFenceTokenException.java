package dev.fencing.jdbc;

/**
 * A token was zero or negative. Tokens are positive (a fresh protected row stores 0, which every valid
 * token beats), so such a token means a broken token source; it is refused before any SQL runs.
 *
 * <pre>{@code
 * writer.update(update, 0); // throws InvalidFenceTokenException, the database is not contacted
 * }</pre>
 */
public final class InvalidFenceTokenException extends FencingJdbcException {
    private static final long serialVersionUID = 1L;

    public InvalidFenceTokenException(String table, Object key, long token) {
        super(
                "fence token must be > 0, got " + token + " for " + table + " key " + key + "; nothing was written",
                table,
                key,
                token,
                null);
    }
}
