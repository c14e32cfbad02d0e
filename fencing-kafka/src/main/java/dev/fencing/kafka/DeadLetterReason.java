package dev.fencing.kafka;

/**
 * Why a record went to the dead-letter topic; its name is the value of the {@value
 * DeadLetterHeaders#REASON} header.
 */
public enum DeadLetterReason {
    /** No {@value FenceTokenHeader#NAME} header: never accepted, since the consumer cannot fence it. */
    MISSING_TOKEN,
    /**
     * The header is not 8 bytes holding a big-endian long from 1 to {@link FenceTokenHeader#MAX_TOKEN} (2^56 -
     * 1): eight bytes of text, such as the console producer's {@code 00000042}, are refused here.
     */
    UNREADABLE_TOKEN,
    /** The token is older than the key's watermark (or equal, under FencePolicy.STRICT). */
    STALE_TOKEN,
    /** The record has no key, so it belongs to no resource and has no per-resource order. */
    MISSING_KEY,
    /** The key or value deserializer threw. */
    UNREADABLE_RECORD
}
