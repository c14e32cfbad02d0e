package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class FencedScriptTest {

    /**
     * UTF-8 has no encoding for a surrogate without its pair: the body would reach Redis with {@code ?} in its
     * place, so that a key or value the body names would differ in Java and in Redis, as keys and arguments
     * with one are refused.
     */
    @Test
    void aBodyWithAnUnpairedSurrogateIsRefusedNamingWhere() {
        assertThatThrownBy(() -> FencedScript.of("return redis.call('GET', KEYS[1] .. ':\uD800')"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uD800")
                .hasMessageContaining("index 38");
        assertThatThrownBy(() -> FencedScript.of("return '\uDC00'"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uDC00")
                .hasMessageContaining("index 8");
        assertThatThrownBy(() -> FencedScript.of("return '\uD800'"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("index 8");
    }

    @Test
    void aBodyWithAPairedSurrogateIsText() {
        assertThat(FencedScript.of("return '\uD83D\uDE00'").body()).isEqualTo("return '\uD83D\uDE00'");
    }

    @Test
    void aBlankBodyIsRefused() {
        assertThatThrownBy(() -> FencedScript.of(" \n")).isInstanceOf(IllegalArgumentException.class);
    }
}
