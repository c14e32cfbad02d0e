package dev.fencing.kafka;

import dev.fencing.FenceTokens;
import dev.fencing.InvalidFenceTokenException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Objects;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The record header that carries a fence token: name {@value #NAME}, value exactly 8 bytes, the token as
 * a big-endian signed {@code long} (the layout of {@link java.nio.ByteBuffer#putLong(long)} and of Kafka's
 * {@code LongSerializer}), and always greater than zero.
 *
 * <pre>{@code
 * byte[] value = FenceTokenHeader.encode(42L); // 00 00 00 00 00 00 00 2a
 * long token = FenceTokenHeader.decode(value); // 42
 * long carried = FenceTokenHeader.read(record.headers()); // -1 without the header; throws if it is unreadable
 * }</pre>
 *
 * Stateless and thread-safe.
 */
public final class FenceTokenHeader {
    /** The header name; API, like a Kafka config key: never renamed lightly. */
    public static final String NAME = "fencing-token";

    /** Length in bytes of a header value. */
    public static final int LENGTH = Long.BYTES;

    private static final VarHandle BIG_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private FenceTokenHeader() {}

    /**
     * The header value for a token.
     *
     * @throws InvalidFenceTokenException if the token is not positive
     */
    public static byte[] encode(long token) {
        FenceTokens.requirePositive(token, "header " + NAME);
        byte[] bytes = new byte[LENGTH];
        for (int i = LENGTH - 1; i >= 0; i--) {
            bytes[i] = (byte) token;
            token >>>= 8;
        }
        return bytes;
    }

    /**
     * The token in a header value.
     *
     * @throws UnreadableFenceTokenException if the value is null, not exactly 8 bytes, or not a positive
     *     number
     */
    public static long decode(byte[] value) {
        if (value == null) {
            throw new UnreadableFenceTokenException("header " + NAME + " has no value", null);
        }
        if (value.length != LENGTH) {
            throw new UnreadableFenceTokenException(
                    "header " + NAME + " must be exactly " + LENGTH + " bytes, got " + value.length, null);
        }
        long token = (long) BIG_ENDIAN_LONG.get(value, 0);
        if (token <= 0) {
            throw new UnreadableFenceTokenException(
                    "header " + NAME + " holds " + token + ", a token must be > 0", null);
        }
        return token;
    }

    /**
     * The token of a record, or {@code -1} if it carries no {@value #NAME} header. When the header
     * appears more than once the last one counts, as with {@link Headers#lastHeader(String)}.
     *
     * @throws UnreadableFenceTokenException if the header is present but unreadable
     */
    public static long read(Headers headers) {
        Objects.requireNonNull(headers, "headers");
        Header header = headers.lastHeader(NAME);
        return header == null ? -1 : decode(header.value());
    }
}
