package dev.fencing.jdbc;

/**
 * The token was fresh enough but an extra predicate of the update (such as {@code stock >= :qty}) was
 * false, so nothing was written. The throwing twin of {@link WriteOutcome.PredicateFailed}.
 *
 * <pre>{@code
 * try {
 *     writer.update(reserve, token);
 * } catch (FencePredicateFailedException e) {
 *     return Reservation.OUT_OF_STOCK;
 * }
 * }</pre>
 */
public final class FencePredicateFailedException extends FencedJdbcException {
    private static final long serialVersionUID = 1L;

    private final long storedToken;

    public FencePredicateFailedException(String table, Object key, long storedToken, long token) {
        super(
                "the update's predicate was false on " + table + " key " + key + " (stored token " + storedToken
                        + ", offered token " + token + "); nothing was written",
                table,
                key,
                token,
                null);
        this.storedToken = storedToken;
    }

    public long storedToken() {
        return storedToken;
    }
}
