package dev.fencing.jdbc;

/**
 * The database failed a fenced statement (connection lost, backend terminated, constraint violated,
 * statement timeout...). The cause is the driver's or Jdbi's exception. Whether the write took effect is
 * unknown only if the failure hit during commit; within a transaction that did not commit, nothing did.
 *
 * <pre>{@code
 * try {
 *     writer.update(update, token);
 * } catch (FencedWriteException e) {
 *     // retrying with the same token is safe: the fence makes the write apply at most once (STRICT)
 * }
 * }</pre>
 */
public final class FencedWriteException extends FencedJdbcException {
    private static final long serialVersionUID = 1L;

    public FencedWriteException(String message, String table, Object key, long token, Throwable cause) {
        super(message, table, key, token, cause);
    }
}
