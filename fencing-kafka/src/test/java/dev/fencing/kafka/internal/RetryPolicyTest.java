package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.WatermarkStoreException;
import java.sql.SQLException;
import java.time.Duration;
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
}
