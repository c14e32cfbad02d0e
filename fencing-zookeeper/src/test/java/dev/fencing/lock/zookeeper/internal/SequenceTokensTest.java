package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.zookeeper.FenceTokenExhaustedException;
import org.junit.jupiter.api.Test;

class SequenceTokensTest {

    @Test
    void tokenIsTheParentsBasePlusTheSequenceNumberPlusOneLikeTheEarlierFormulaAtBaseZero() {
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_1f2e-lock-0000000001", 0, 10))
                .isEqualTo(2);
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_1f2e-lock-0000000041", 0, 10))
                .isEqualTo(42);
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_1f2e-lock-0000000003", 4_294_967_300L, 10))
                .isEqualTo(4_294_967_304L);
    }

    @Test
    void refusesATokenWithinTheWrapMargin() {
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-2147483637", 0, 10))
                .isEqualTo(2147483638L);
        assertThatThrownBy(() -> SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-2147483638", 0, 10))
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining("/locks/a")
                .hasMessageContaining("2147483638")
                .hasMessageContaining("wrap");
    }

    @Test
    void noTokenOfAnIncarnationReachesTheNextIncarnationsBase() {
        long base = 4_294_967_296L;
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-2147483647", base, 0))
                .isEqualTo(base + LockParents.INCARNATION_SPAN)
                .isLessThan(SequenceTokens.token(
                        "/locks/a", "/locks/a/_c_x-lock-0000000000", base + LockParents.INCARNATION_SPAN, 0));
    }

    @Test
    void refusesAWrappedNegativeSequence() {
        assertThatThrownBy(() -> SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock--2147483648", 0, 0))
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining("-2147483648");
    }

    @Test
    void refusesATokenThatWouldPassLongMaxNamingThePathAndTheBase() {
        long base = Long.MAX_VALUE - 6;
        assertThat(SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-0000000005", base, 0))
                .isEqualTo(Long.MAX_VALUE);
        assertThatThrownBy(() -> SequenceTokens.token("/locks/a", "/locks/a/_c_x-lock-0000000006", base, 0))
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining("/locks/a")
                .hasMessageContaining(Long.toString(base));
    }
}
