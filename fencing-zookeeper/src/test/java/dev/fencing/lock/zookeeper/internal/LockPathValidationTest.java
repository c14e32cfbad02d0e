package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LockPathValidationTest {

    @Test
    void acceptsAnAbsolutePath() {
        assertThatCode(() -> LockRegistry.validatePath("/locks/sku-42")).doesNotThrowAnyException();
    }

    @Test
    void rejectsEmptyRelativeTrailingSlashRootAndNullPathsNamingTheValue() {
        assertThatThrownBy(() -> LockRegistry.validatePath("")).hasMessageContaining("must not be empty");
        assertThatThrownBy(() -> LockRegistry.validatePath("locks/a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'locks/a'");
        assertThatThrownBy(() -> LockRegistry.validatePath("/locks/a/"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/locks/a/'");
        assertThatThrownBy(() -> LockRegistry.validatePath("/locks//a")).hasMessageContaining("'/locks//a'");
        assertThatThrownBy(() -> LockRegistry.validatePath("/")).hasMessageContaining("root");
        assertThatThrownBy(() -> LockRegistry.validatePath(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("lock path");
    }

    @Test
    void rejectsAPathThatLandsInTheHistoryThroughItsNamespace() {
        assertThatThrownBy(() -> LockRegistry.validatePath("fencing-lock-history", "/locks/a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/locks/a'")
                .hasMessageContaining("/fencing-lock-history/locks/a");
        assertThatCode(() -> LockRegistry.validatePath("shop", "/fencing-lock-history-not/a"))
                .doesNotThrowAnyException();
    }
}
