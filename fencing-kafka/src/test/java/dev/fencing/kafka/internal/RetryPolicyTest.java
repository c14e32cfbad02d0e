package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.WatermarkStoreException;
import java.sql.SQLException;
import java.time.Duration;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
    private static final WatermarkStoreException LOST_CONNECTION =
            new WatermarkStoreException("store failed", new SQLException("I/O error", "08006"));

    /**
     * {@code fencing.retry.max.ms=9223372036854775807} (Long.MAX_VALUE, "retry for as long as it takes") and a
     * back-off as long are accepted at build: the run of failures must then be waited out, not end at its first
     * failure because the time left does not fit a long of nanoseconds.
     */
    @Test
    void aRetryTimeOrBackOffTooLongForNanosecondsRetriesForAsLongAsItTakes() {
        Duration forever = Duration.ofMillis(Long.MAX_VALUE);
        RetryPolicy.Attempts attempts =
                new RetryPolicy(Duration.ofMillis(100), Duration.ofSeconds(10), forever, true, e -> false).attempts();
        assertThat(attempts.next(LOST_CONNECTION))
                .isEqualTo(Duration.ofMillis(100).toNanos());
        assertThat(attempts.next(LOST_CONNECTION))
                .isEqualTo(Duration.ofMillis(200).toNanos());

        RetryPolicy.Attempts longWaits = new RetryPolicy(forever, forever, forever, true, e -> false).attempts();
        assertThat(longWaits.next(LOST_CONNECTION)).isEqualTo(Long.MAX_VALUE);
        assertThat(longWaits.next(LOST_CONNECTION)).isPositive();
    }

    /**
     * The topic ids the consumer checks when it takes partitions come from Kafka: a description that Kafka says
     * to retry (a timeout, a topic not known to the broker yet) is retried as a store's transient failure; one
     * it does not (not authorized to describe the topic) stops the consumer.
     */
    @Test
    void aTopicDescriptionKafkaCallsRetriableIsRetriedAndAnotherIsNot() {
        RetryPolicy policy = new RetryPolicy(
                Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofMinutes(1), false, e -> false);
        assertThat(policy.retries(new WatermarkStoreException(
                        "could not read the Kafka topic ids of [orders]", new TimeoutException("timed out"))))
                .isTrue();
        assertThat(policy.retries(new WatermarkStoreException(
                        "could not read the Kafka topic ids of [orders]",
                        new TopicAuthorizationException("not authorized"))))
                .isFalse();
    }
}
