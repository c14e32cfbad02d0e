package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.util.List;
import org.junit.jupiter.api.Test;

class RedisWorkloadTest {

    @Test
    void aTokenKeyHoldingTheTextOfANumberIsReadAsThatNumber() {
        assertThat(RedisWorkload.number("k", "42")).isEqualTo(42);
        assertThat(RedisWorkload.number("k", Long.toString(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE);
        assertThat(RedisWorkload.ids("log", List.of("7", "3000017"))).containsExactly(7L, 3000017L);
    }

    @Test
    void textThatIsANumberOnlyOnceTrimmedOrReparsedMakesTheStateUnusableNamingTheKeyAndTheText() {
        // the writers store Long.toString of ids and tokens: none of these is text they store
        for (String text : List.of(" 101", "101\n", "+101", "0101", "-0", "")) {
            assertThat(catchThrowable(() -> RedisWorkload.number("verify-x:token", text)))
                    .as("'%s'", text)
                    .isInstanceOf(VerifyException.class)
                    .hasMessageContaining("verify-x:token")
                    .hasMessageContaining("'" + text + "'");
        }
        assertThatThrownBy(() -> RedisWorkload.ids("verify-x:log", List.of("5", "06")))
                .isInstanceOf(VerifyException.class)
                .hasMessageContaining("verify-x:log")
                .hasMessageContaining("'06'");
    }
}
