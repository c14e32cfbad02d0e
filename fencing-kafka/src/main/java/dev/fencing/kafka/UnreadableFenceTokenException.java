package dev.fencing.kafka;

import dev.fencing.InvalidFenceTokenException;

/**
 * A {@value FenceTokenHeader#NAME} header whose value is not a token: not exactly 8 bytes, or not a big-endian
 * {@code long} from 1 to {@link FenceTokenHeader#MAX_TOKEN} (2^56 - 1). The consumer dead-letters such a record
 * (reason {@code UNREADABLE_TOKEN}); {@link FenceTokenHeader#decode} throws this, and {@link
 * FenceTokenHeader#encode} for a token above the bound.
 *
 * <p>It extends fencing-core's {@link InvalidFenceTokenException}, not {@link FencedKafkaException}: it is the
 * Kafka wire-format case of the same failure (a token that cannot be accepted, refused before anything is
 * written), so code that catches invalid tokens from any resource catches it too; like every toolkit failure
 * it is still a {@link dev.fencing.FencingException}.
 */
public final class UnreadableFenceTokenException extends InvalidFenceTokenException {
    private static final long serialVersionUID = 1L;

    /** {@code why} says what is wrong with the value; {@code where} names the record (topic, partition, offset). */
    public UnreadableFenceTokenException(String why, String where) {
        super(why + (where == null ? "" : " in " + where), where, null);
    }
}
