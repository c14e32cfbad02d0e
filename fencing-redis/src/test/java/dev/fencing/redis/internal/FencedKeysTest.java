package dev.fencing.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FencedKeysTest {

    private final FencedKeys standalone = new FencedKeys(false, 16, 64);
    private final FencedKeys cluster = new FencedKeys(true, 16, 64);

    @Test
    void theHashTagIsReadAsRedisClusterReadsIt() {
        assertThat(FencedKeys.hashTag("{sku-42}:stock")).isEqualTo("sku-42");
        assertThat(FencedKeys.hashTag("stock:{sku-42}")).isEqualTo("sku-42");
        assertThat(FencedKeys.hashTag("a{b}{c}")).isEqualTo("b");
        assertThat(FencedKeys.hashTag("{}sku")).isNull();
        assertThat(FencedKeys.hashTag("{sku")).isNull();
        assertThat(FencedKeys.hashTag("sku")).isNull();
    }

    @Test
    void theTokenKeyKeepsTheKeysHashTag() {
        String tokenKey = standalone.check("{sku-42}:stock");
        assertThat(tokenKey).isEqualTo("{sku-42}:stock:fencing-token");
        assertThat(FencedKeys.hashTag(tokenKey)).isEqualTo("sku-42");
    }

    @Test
    void aClusterRefusesAKeyWithoutHashTagNamingIt() {
        assertThat(standalone.check("stock:sku-42")).isEqualTo("stock:sku-42:fencing-token");
        assertThatThrownBy(() -> cluster.check("stock:sku-42"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'stock:sku-42'")
                .hasMessageContaining("hash tag");
        assertThatThrownBy(() -> cluster.checkScriptKeys(List.of("{a}:x", "{b}:y")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'{b}:y'");
        assertThat(cluster.checkScriptKeys(List.of("{a}:x", "{a}:y"))).isEqualTo("{a}:x:fencing-token");
    }

    @Test
    void aTokenKeyOrAnEmptyKeyIsNotAFencedKey() {
        assertThatThrownBy(() -> standalone.check("k:fencing-token"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'k:fencing-token'");
        assertThatThrownBy(() -> standalone.check("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> standalone.checkScriptKeys(List.of())).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aValueOverTheLimitIsRefusedNamingKeyAndSize() {
        standalone.checkValue("k", "x".repeat(16));
        assertThatThrownBy(() -> standalone.checkValue("k", "x".repeat(17)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'k'")
                .hasMessageContaining("17 bytes");
        // five characters, ten bytes in UTF-8
        standalone.checkValue("k", "ééééé");
        assertThatThrownBy(() -> standalone.checkValue("k", "éééééééééé")).hasMessageContaining("20 bytes");
        assertThatThrownBy(() -> standalone.checkFields("h", Map.of("field", "valuevaluevalue")))
                .hasMessageContaining("'h'")
                .hasMessageContaining("20 bytes");
    }

    @Test
    void guardArithmeticBeyondTwoToThe53IsRefused() {
        FencedKeys.checkExact("k", "delta", 1L << 53);
        assertThatThrownBy(() -> FencedKeys.checkExact("k", "delta", (1L << 53) + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("delta 9007199254740993")
                .hasMessageContaining("'k'");
    }

    @Test
    void aKeyIsShownWholeUpTo200BytesAndLongerOnesByStartSizeAndHash() {
        String whole = "k".repeat(200);
        assertThat(FencedKeys.shown(whole)).isSameAs(whole);
        assertThat(FencedKeys.shown("é".repeat(100))).isEqualTo("é".repeat(100));
        // SHA-1 of 201 'k's (printf 'k%.0s' {1..201} | sha1sum)
        assertThat(FencedKeys.shown("k".repeat(201))).isEqualTo("k".repeat(64) + "... (201 bytes, sha1 76e7153607cf)");
        // the 64th byte is the first half of a two-byte character: the cut falls back before it
        String wide = "a" + "é".repeat(200);
        assertThat(FencedKeys.shown(wide)).startsWith("a" + "é".repeat(31) + "... (401 bytes, sha1 ");
        assertThat(FencedKeys.shown(null)).isNull();
    }
}
