package dev.fencing;

/**
 * A token was zero or negative, or its encoding could not be read. Such a token means a broken token
 * source; it is refused before anything is written.
 *
 * <pre>{@code
 * writer.update(update, 0); // throws InvalidFenceTokenException; the database is not contacted
 * }</pre>
 */
public class InvalidFenceTokenException extends FencingException {
    private static final long serialVersionUID = 1L;

    /** A non-positive {@code token} offered for {@code where} (a table and key, a topic and key). */
    public InvalidFenceTokenException(long token, String where) {
        super("fence token must be > 0, got " + token + " for " + where + "; nothing was written", where, token, null);
    }

    /** A token that could not be read at all; {@code message} says why and where. */
    protected InvalidFenceTokenException(String message, String resource, Throwable cause) {
        super(message, resource, 0, cause);
    }
}
