package dev.fencing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class FencePolicyTest {

    @Test
    void strictAdmitsOnlyAGreaterToken() {
        assertThat(FencePolicy.STRICT.admits(7, 8)).isTrue();
        assertThat(FencePolicy.STRICT.admits(8, 8)).isFalse();
        assertThat(FencePolicy.STRICT.admits(9, 8)).isFalse();
    }

    @Test
    void monotonicAdmitsAnEqualTokenButNotAnOlderOne() {
        assertThat(FencePolicy.MONOTONIC.admits(7, 8)).isTrue();
        assertThat(FencePolicy.MONOTONIC.admits(8, 8)).isTrue();
        assertThat(FencePolicy.MONOTONIC.admits(9, 8)).isFalse();
    }

    @Test
    void aNonPositiveTokenIsRefusedWithTheValueAndTheResourceInTheMessage() {
        assertThat(FenceTokens.requirePositive(1, "inventory key A")).isEqualTo(1);
        assertThatThrownBy(() -> FenceTokens.requirePositive(0, "inventory key A"))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("got 0")
                .hasMessageContaining("inventory key A");
        assertThatThrownBy(() -> FenceTokens.requirePositive(-5, "t"))
                .isInstanceOf(FencingException.class)
                .hasMessageContaining("-5");
    }
}
