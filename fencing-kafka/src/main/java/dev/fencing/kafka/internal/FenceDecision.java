package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.UnreadableFenceTokenException;
import org.apache.kafka.common.header.Header;

/**
 * The fence's decision for one record, as a pure function of what the record carries and its key's
 * watermark: accept (with the record's token), stale, or dead-letter for a missing key, a missing token or an
 * unreadable one. No I/O and no allocation on the accepting path; every record pays for it.
 *
 * <p>The verdict is a {@code long}: the token (always {@code > 0}) when the record is accepted, otherwise one
 * of the negative constants below.
 */
public final class FenceDecision {
    /** Older than the watermark, or equal to it under {@link FencePolicy#STRICT}. */
    public static final long STALE = -1;
    /** No record key: the record belongs to no resource. */
    public static final long MISSING_KEY = -2;
    /** No {@value FenceTokenHeader#NAME} header. */
    public static final long MISSING_TOKEN = -3;
    /** A header that does not hold a token. */
    public static final long UNREADABLE_TOKEN = -4;

    private FenceDecision() {}

    /**
     * @param hasKey whether the record has a key
     * @param tokenHeader the record's last {@value FenceTokenHeader#NAME} header, or null
     * @param watermark the key's highest accepted token, 0 if none
     */
    public static long decide(boolean hasKey, Header tokenHeader, long watermark, FencePolicy policy) {
        if (!hasKey) {
            return MISSING_KEY;
        }
        if (tokenHeader == null) {
            return MISSING_TOKEN;
        }
        long token;
        try {
            token = FenceTokenHeader.decode(tokenHeader.value());
        } catch (UnreadableFenceTokenException e) {
            return UNREADABLE_TOKEN;
        }
        return policy.admits(watermark, token) ? token : STALE;
    }

    /**
     * {@link #decide(boolean, Header, long, FencePolicy)} for a token already read from the header ({@link
     * TokenHeaderReader}): {@code carried} is the token, or {@link #MISSING_TOKEN} or {@link #UNREADABLE_TOKEN}.
     */
    public static long decide(boolean hasKey, long carried, long watermark, FencePolicy policy) {
        if (!hasKey) {
            return MISSING_KEY;
        }
        if (carried <= 0) {
            return carried;
        }
        return policy.admits(watermark, carried) ? carried : STALE;
    }

    /** Whether a verdict accepts the record. */
    public static boolean accepted(long verdict) {
        return verdict > 0;
    }

    /**
     * What a person reads about a refused record (the dead letter's detail header, the DEBUG line of a drop).
     *
     * @param header the record's token header (null if none)
     * @param watermark the key's watermark the record was judged against
     * @param key the record's key bytes (null if none)
     */
    public static String detail(long verdict, Header header, long watermark, byte[] key) {
        return switch (reason(verdict)) {
            case MISSING_KEY -> "record has no key";
            case MISSING_TOKEN -> "no " + FenceTokenHeader.NAME + " header";
            case UNREADABLE_TOKEN -> unreadable(header);
            default -> {
                long token = FenceTokenHeader.decode(header.value());
                yield "token " + token + " is " + (token < watermark ? "older than" : "equal to") + " watermark "
                        + watermark + " of key " + Keys.describe(key);
            }
        };
    }

    private static String unreadable(Header header) {
        try {
            FenceTokenHeader.decode(header.value());
            return "unreadable " + FenceTokenHeader.NAME + " header";
        } catch (UnreadableFenceTokenException e) {
            return e.getMessage();
        }
    }

    /** Why a refused record is refused. */
    public static DeadLetterReason reason(long verdict) {
        if (verdict == STALE) {
            return DeadLetterReason.STALE_TOKEN;
        }
        if (verdict == MISSING_KEY) {
            return DeadLetterReason.MISSING_KEY;
        }
        if (verdict == MISSING_TOKEN) {
            return DeadLetterReason.MISSING_TOKEN;
        }
        if (verdict == UNREADABLE_TOKEN) {
            return DeadLetterReason.UNREADABLE_TOKEN;
        }
        throw new IllegalArgumentException("verdict " + verdict + " accepts the record");
    }
}
