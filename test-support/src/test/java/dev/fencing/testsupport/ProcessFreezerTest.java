package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ProcessFreezerTest {

    @Test
    void aFrozenProcessStaysStoppedUntilItIsResumed() throws IOException {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            // when
            ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(sleeper.pid(), Duration.ofSeconds(30));

            // then
            await().atMost(Duration.ofSeconds(10)).until(() -> ProcessFreezer.isStopped(sleeper.pid()));
            frozen.close();
            await().atMost(Duration.ofSeconds(10)).until(() -> !ProcessFreezer.isStopped(sleeper.pid()));
            frozen.close(); // twice is harmless
        } finally {
            sleeper.destroyForcibly();
        }
    }

    @Test
    void theResumerThawsTheProcessAfterTheLimitEvenIfNobodyResumesIt() throws IOException {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(sleeper.pid(), Duration.ofSeconds(1));
            await().atMost(Duration.ofSeconds(10)).until(() -> ProcessFreezer.isStopped(sleeper.pid()));

            // then: nobody calls close(), the resumer's time limit thaws it
            await().atMost(Duration.ofSeconds(15)).until(() -> !ProcessFreezer.isStopped(sleeper.pid()));
            frozen.close();
        } finally {
            sleeper.destroyForcibly();
        }
    }

    @Test
    void badArgumentsAreRefusedNamingTheValue() {
        assertThatThrownBy(() -> ProcessFreezer.freeze(0, Duration.ofSeconds(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
        assertThatThrownBy(() -> ProcessFreezer.freeze(1234, Duration.ofMillis(10)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT0.01S");
    }
}
