package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.ProcessFreezer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A child's freeze, on a plain {@code sleep} standing in for a JVM. */
class ChildJvmTest {
    @TempDir
    Path directory;

    private ChildJvm launch(String... command) {
        return ChildJvm.launch("worker 1", 1, List.of(command), Map.of(), directory.resolve("worker.log"), line -> {});
    }

    @Test
    void aFrozenWorkerStaysStoppedUntilItIsThawed() {
        try (ChildJvm worker = launch("sleep", "60")) {
            // when
            worker.freeze(Duration.ofSeconds(30));

            // then
            await().atMost(Duration.ofSeconds(10)).until(() -> ProcessFreezer.isStopped(worker.pid()));
            worker.thaw();
            await().atMost(Duration.ofSeconds(10)).until(() -> !ProcessFreezer.isStopped(worker.pid()));
            worker.thaw(); // twice is harmless
            assertThat(worker.isAlive()).isTrue();
        }
    }

    @Test
    void closingAFrozenWorkerKillsItAndStopsItsResumer() {
        ChildJvm worker = launch("sleep", "60");
        worker.freeze(Duration.ofSeconds(30));
        await().atMost(Duration.ofSeconds(10)).until(() -> ProcessFreezer.isStopped(worker.pid()));

        // when
        worker.close();

        // then: no resumer is left waiting to send SIGCONT to a pid that may be reused
        assertThat(worker.isAlive()).isFalse();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(ProcessHandle.current().descendants())
                        .noneMatch(p -> p.isAlive()
                                && p.info().commandLine().orElse("").contains("kill -CONT " + worker.pid())));
        worker.close(); // twice is harmless
    }

    @Test
    void freezingAndThawingAWorkerThatHasExitedIsNotAnError() {
        ChildJvm worker = launch("true");
        assertThat(worker.awaitExit(Duration.ofSeconds(10))).isTrue();

        // when / then: its exit is reported by the scenario, not by the freeze
        worker.freeze(Duration.ofSeconds(5));
        worker.thaw();
        worker.close();
        assertThat(worker.isAlive()).isFalse();
    }
}
