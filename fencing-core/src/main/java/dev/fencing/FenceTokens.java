package dev.fencing;

/**
 * The check every resource makes before it looks at a token: tokens are positive. A fresh protected
 * resource stores 0, which every valid token beats, so a zero or negative token means a broken token source
 * and is refused before anything is written.
 *
 * <pre>{@code
 * long token = FenceTokens.requirePositive(lease.token(), "inventory key sku-42");
 * }</pre>
 */
public final class FenceTokens {
    private FenceTokens() {}

    /**
     * Returns {@code token} if it is positive.
     *
     * @param where what the token was offered for (a table and key, a topic and key), named in the message
     * @throws InvalidFenceTokenException if {@code token <= 0}
     */
    public static long requirePositive(long token, String where) {
        if (token <= 0) {
            throw new InvalidFenceTokenException(token, where);
        }
        return token;
    }
}
