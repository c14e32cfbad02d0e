package dev.fencing.kafka;

import java.util.Locale;

/** What the consumer does with a record whose token is older than its key's watermark. */
public enum StaleRecordPolicy {
    /** Send it to the dead-letter topic (reason {@link DeadLetterReason#STALE_TOKEN}) and count it. */
    DEAD_LETTER("dead-letter"),
    /**
     * Count it ({@code fencing.kafka.records.dropped}, with a meter registry only) and log it at DEBUG with key
     * and tokens: without a registry and DEBUG logging, nothing shows that it was dropped.
     */
    DROP("drop");

    private final String configValue;

    StaleRecordPolicy(String configValue) {
        this.configValue = configValue;
    }

    /** The value of {@value FencedConsumerConfig#STALE_RECORDS_CONFIG} that selects this policy. */
    public String configValue() {
        return configValue;
    }

    /**
     * The policy a {@value FencedConsumerConfig#STALE_RECORDS_CONFIG} value selects.
     *
     * @throws IllegalArgumentException if it selects none
     */
    public static StaleRecordPolicy fromConfig(Object value) {
        String text = String.valueOf(value).trim().toLowerCase(Locale.ROOT);
        for (StaleRecordPolicy policy : values()) {
            if (policy.configValue.equals(text)) {
                return policy;
            }
        }
        throw new IllegalArgumentException(
                FencedConsumerConfig.STALE_RECORDS_CONFIG + "='" + value + "' is not one of dead-letter, drop");
    }
}
