package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;

class FenceDecisionTest {
    private static RecordHeader token(long token) {
        return new RecordHeader(FenceTokenHeader.NAME, FenceTokenHeader.encode(token));
    }

    @Test
    void acceptsATokenNotOlderThanTheWatermarkAndReturnsIt() {
        assertThat(FenceDecision.decide(true, token(7), 0, FencePolicy.MONOTONIC))
                .isEqualTo(7);
        assertThat(FenceDecision.decide(true, token(7), 6, FencePolicy.STRICT)).isEqualTo(7);
        assertThat(FenceDecision.decide(true, token(7), 7, FencePolicy.MONOTONIC))
                .isEqualTo(7);
    }

    @Test
    void refusesAnOlderTokenUnderBothPoliciesAndAnEqualOneUnderStrict() {
        assertThat(FenceDecision.decide(true, token(6), 7, FencePolicy.MONOTONIC))
                .isEqualTo(FenceDecision.STALE);
        assertThat(FenceDecision.decide(true, token(6), 7, FencePolicy.STRICT)).isEqualTo(FenceDecision.STALE);
        assertThat(FenceDecision.decide(true, token(7), 7, FencePolicy.STRICT)).isEqualTo(FenceDecision.STALE);
        assertThat(FenceDecision.reason(FenceDecision.STALE)).isEqualTo(DeadLetterReason.STALE_TOKEN);
    }

    @Test
    void deadLettersRecordsWithoutKeyOrWithoutOrWithAnUnreadableToken() {
        assertThat(FenceDecision.decide(false, token(9), 0, FencePolicy.MONOTONIC))
                .isEqualTo(FenceDecision.MISSING_KEY);
        assertThat(FenceDecision.decide(true, null, 0, FencePolicy.MONOTONIC)).isEqualTo(FenceDecision.MISSING_TOKEN);
        assertThat(FenceDecision.decide(
                        true, new RecordHeader(FenceTokenHeader.NAME, new byte[4]), 0, FencePolicy.MONOTONIC))
                .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
        assertThat(FenceDecision.decide(
                        true, new RecordHeader(FenceTokenHeader.NAME, new byte[8]), 0, FencePolicy.MONOTONIC))
                .as("token 0 is not a token")
                .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
        assertThat(FenceDecision.decide(
                        true,
                        new RecordHeader(FenceTokenHeader.NAME, "00000042".getBytes(StandardCharsets.US_ASCII)),
                        41,
                        FencePolicy.MONOTONIC))
                .as("the console producer's text for 42 is no token of 3.47e18")
                .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
        assertThat(FenceDecision.reason(FenceDecision.MISSING_KEY)).isEqualTo(DeadLetterReason.MISSING_KEY);
        assertThat(FenceDecision.reason(FenceDecision.MISSING_TOKEN)).isEqualTo(DeadLetterReason.MISSING_TOKEN);
        assertThat(FenceDecision.reason(FenceDecision.UNREADABLE_TOKEN)).isEqualTo(DeadLetterReason.UNREADABLE_TOKEN);
        assertThatThrownBy(() -> FenceDecision.reason(5)).isInstanceOf(IllegalArgumentException.class);
    }
}
