package dev.fencing.kafka;

/**
 * Headers the consumer adds to a record it sends to the dead-letter topic. The record keeps its key, value
 * and original headers (including {@value FenceTokenHeader#NAME}); the values below are UTF-8 text.
 *
 * <pre>{@code
 * String reason =
 *         new String(dlt.headers().lastHeader(DeadLetterHeaders.REASON).value(), UTF_8); // "STALE_TOKEN"
 * }</pre>
 */
public final class DeadLetterHeaders {
    /** A {@link DeadLetterReason} name. */
    public static final String REASON = "fencing-dlt-reason";
    /** A sentence for a person, for example {@code token 3 is older than watermark 5 of key sku-1}. */
    public static final String DETAIL = "fencing-dlt-detail";
    /** Topic the record was read from. */
    public static final String ORIGIN_TOPIC = "fencing-dlt-topic";
    /** Partition the record was read from, in decimal. */
    public static final String ORIGIN_PARTITION = "fencing-dlt-partition";
    /** Offset of the record in its partition, in decimal. */
    public static final String ORIGIN_OFFSET = "fencing-dlt-offset";
    /** Consumer group that refused it. */
    public static final String GROUP = "fencing-dlt-group";

    private DeadLetterHeaders() {}
}
