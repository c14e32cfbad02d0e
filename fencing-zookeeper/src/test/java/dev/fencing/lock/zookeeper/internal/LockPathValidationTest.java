package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LockPathValidationTest {

    @Test
    void acceptsAnAbsolutePath() {
        assertThatCode(() -> LockNames.requireValidPath("/locks/sku-42")).doesNotThrowAnyException();
    }

    @Test
    void rejectsEmptyRelativeTrailingSlashRootAndNullPathsNamingTheValue() {
        assertThatThrownBy(() -> LockNames.requireValidPath("")).hasMessageContaining("must not be empty");
        assertThatThrownBy(() -> LockNames.requireValidPath("locks/a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'locks/a'");
        assertThatThrownBy(() -> LockNames.requireValidPath("/locks/a/"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/locks/a/'");
        assertThatThrownBy(() -> LockNames.requireValidPath("/locks//a")).hasMessageContaining("'/locks//a'");
        assertThatThrownBy(() -> LockNames.requireValidPath("/")).hasMessageContaining("root");
        assertThatThrownBy(() -> LockNames.requireValidPath(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("lock path");
    }

    @Test
    void rejectsAPathThatLandsInTheHistoryThroughItsNamespace() {
        assertThatThrownBy(() -> LockNames.requireValidPath("fencing-lock-history", "/locks/a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/locks/a'")
                .hasMessageContaining("/fencing-lock-history/locks/a");
        assertThatCode(() -> LockNames.requireValidPath("shop", "/fencing-lock-history-not/a"))
                .doesNotThrowAnyException();
    }

    /**
     * Curator's path check lets the first and last characters of the ranges ZooKeeper refuses through (U+001F,
     * U+007F, U+009F, U+D800, U+F8FF, U+FFF0, U+FFFF; ZooKeeper's client refuses them at the first create), so that
     * a lock made with such a path failed only when acquired.
     */
    @Test
    void rejectsEveryCharacterZooKeeperRefusesAtOnceNamingItsCodeAndIndex() {
        for (char c : new char[] {'\u001F', '\u007F', '\u009F', '\uD800', '\uDBFF', '\uF8FF', '\uFFF0', '\uFFFF'}) {
            assertThatThrownBy(() -> LockNames.requireValidPath("/locks/sku-" + c))
                    .as("U+%04X", (int) c)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'/locks/sku-?'")
                    .hasMessageContaining(String.format("\\u%04X at index 11", (int) c));
        }
        assertThatCode(() -> LockNames.requireValidPath("/locks/sku-\u00E9\u00A0\uFFEF"))
                .doesNotThrowAnyException();
    }

    /**
     * ZooKeeper refuses U+0000 in a path too. Left to Curator's check, the path was refused with the NUL raw in the
     * message, twice (Curator's own message quotes the path).
     */
    @Test
    void rejectsANullCharacterNamingItsCodeAndIndexWithoutItInTheMessage() {
        assertThatThrownBy(() -> LockNames.requireValidPath("/locks/sku-\u0000"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/locks/sku-?'")
                .hasMessageContaining("\\u0000 at index 11")
                .satisfies(e -> assertThat(e.getMessage().chars()).noneMatch(Character::isISOControl));
    }
}
