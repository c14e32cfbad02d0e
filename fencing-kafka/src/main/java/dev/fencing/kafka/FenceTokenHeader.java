package dev.fencing.kafka;

import dev.fencing.FenceTokens;
import dev.fencing.InvalidFenceTokenException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The record header that carries a fence token: name {@value #NAME}, value exactly 8 bytes, the token as
 * a big-endian signed {@code long} (the layout of {@link java.nio.ByteBuffer#putLong(long)} and of Kafka's
 * {@code LongSerializer}), always greater than zero and below 2<sup>56</sup> ({@link #MAX_TOKEN}): the first
 * byte is always 0. Eight bytes of text, which a tool that writes headers as strings makes of a token (Kafka's
 * console producer writes {@code 00000042} for 42), read as a number above 2<sup>56</sup>; so does any other
 * value whose first byte is not 0. Such a value is refused as unreadable, not taken for a token far above every
 * real one that would refuse the key's later records as stale. fencing-zookeeper's tokens stay far below the bound: a
 * SEQUENCE token is its lock parent's base (0, plus 2<sup>31</sup> per re-creation of the parent) plus a
 * sequence below 2<sup>31</sup>; a ZXID token (epoch in the high 32 bits) stays below 2<sup>56</sup> while the
 * ensemble's leader epoch is below 2<sup>24</sup>.
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

    /** The largest token a header carries: 2<sup>56</sup> - 1. Larger values are unreadable. */
    public static final long MAX_TOKEN = (1L << 56) - 1;

    private static final VarHandle BIG_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private FenceTokenHeader() {}

    /**
     * The header value for a token.
     *
     * @throws InvalidFenceTokenException if the token is not positive, or above {@link #MAX_TOKEN} (an {@link
     *     UnreadableFenceTokenException}: no consumer would read it)
     */
    public static byte[] encode(long token) {
        FenceTokens.requirePositive(token, "header " + NAME);
        if (token > MAX_TOKEN) {
            throw new UnreadableFenceTokenException(
                    "token " + token + " is above " + MAX_TOKEN + " (2^56 - 1), the largest a " + NAME
                            + " header carries: a consumer would refuse the record as unreadable",
                    null);
        }
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
     * @throws UnreadableFenceTokenException if the value is null, not exactly 8 bytes, or not a number from 1
     *     to {@link #MAX_TOKEN}
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
        if (token > MAX_TOKEN) {
            throw new UnreadableFenceTokenException(
                    "header " + NAME + " holds " + token + textForm(value) + ", above " + MAX_TOKEN
                            + " (2^56 - 1), the largest token a header carries",
                    null);
        }
        return token;
    }

    /** The value as text in quotes, if all of it is printable ASCII (a token written as a string); else "". */
    private static String textForm(byte[] value) {
        for (byte b : value) {
            if (b < 0x20 || b > 0x7e) {
                return "";
            }
        }
        return " (the text \"" + new String(value, StandardCharsets.US_ASCII) + "\")";
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
