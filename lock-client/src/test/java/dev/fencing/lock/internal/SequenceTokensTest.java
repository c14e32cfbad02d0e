package dev.fencing.lock.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.FenceTokenExhaustedException;
import org.junit.jupiter.api.Test;

class SequenceTokensTest {

    @Test
    void tokenIsSequencePlusOneSoTheFirstChildOfAFreshParentGetsOne() {
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_1f2e-lock-0000000000", 10))
                .isEqualTo(1);
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_1f2e-lock-0000000041", 10))
                .isEqualTo(42);
    }

    @Test
    void refusesATokenWithinTheWrapMargin() {
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-2147483637", 10))
                .isEqualTo(2147483638L);
        assertThatThrownBy(() -> SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-2147483638", 10))
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining("/locks/a")
                .hasMessageContaining("2147483638")
                .hasMessageContaining("wrap");
    }

    @Test
    void refusesAWrappedNegativeSequence() {
        assertThatThrownBy(() -> SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock--2147483648", 0))
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining("-2147483648");
    }
}
