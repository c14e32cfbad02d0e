package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

    /**
     * {@code kill -STOP} returns before the signal has stopped every thread; a freezer that said "frozen"
     * then let a worker read its GO and write before the stop landed (the demo's flake). Here every thread
     * of a JVM with busy threads must be stopped by the time {@code freeze} returns, in every round.
     */
    @Test
    void freezeReturnsOnlyOnceEveryThreadOfTheProcessIsStopped() throws IOException {
        Process spinner = spinner(6);
        List<String> early = new ArrayList<>();
        try {
            for (int round = 0; round < 40; round++) {
                try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(spinner.pid(), Duration.ofSeconds(30))) {
                    List<String> running = ProcessFreezer.runningThreads(spinner.pid());
                    if (!running.isEmpty()) {
                        early.add("round " + round + ": " + running);
                    }
                }
                await().atMost(Duration.ofSeconds(10))
                        .pollInterval(Duration.ofMillis(2))
                        .until(() -> !ProcessFreezer.isStopped(spinner.pid()));
            }
        } finally {
            spinner.destroyForcibly();
        }
        assertThat(early).as("threads still running when freeze returned").isEmpty();
    }

    /**
     * The resumer of a freeze that was closed must never send its own SIGCONT afterwards: it would thaw the
     * next freeze of the same process. {@code close()} returns only once the resumer and its children are
     * gone, so the next freeze stays in force.
     */
    @Test
    void aClosedFreezesResumerIsGoneBeforeCloseReturnsSoItCannotThawTheNextFreeze() throws IOException {
        Process sleeper = new ProcessBuilder("sleep", "120").start();
        List<String> thawed = new ArrayList<>();
        try {
            for (int round = 0; round < 20; round++) {
                ProcessFreezer.Frozen first = ProcessFreezer.freeze(sleeper.pid(), Duration.ofSeconds(30));
                List<ProcessHandle> resumerTree = first.resumerTree();
                first.close();
                assertThat(resumerTree)
                        .as("the first freeze's resumer and its children")
                        .allMatch(ProcessFreezer::isDead);
                try (ProcessFreezer.Frozen second = ProcessFreezer.freeze(sleeper.pid(), Duration.ofSeconds(30))) {
                    if (!ProcessFreezer.isStopped(sleeper.pid())) {
                        thawed.add("round " + round);
                    }
                }
            }
        } finally {
            sleeper.destroyForcibly();
        }
        assertThat(thawed).isEmpty();
    }

    /** A process that has exited but is not reaped yet (a zombie) has no thread that runs: it is not frozen. */
    @Test
    void freezingAProcessThatHasExitedFailsInsteadOfReportingItFrozen() throws IOException {
        // sleep 0 exits at once; its parent becomes sleep 60, which never reaps it
        Process parent = new ProcessBuilder("sh", "-c", "sleep 0 & exec sleep 60").start();
        try {
            ProcessHandle zombie = await().atMost(Duration.ofSeconds(10))
                    .until(
                            () -> parent.children().findFirst().filter(ProcessFreezer::isDead),
                            java.util.Optional::isPresent)
                    .orElseThrow();

            assertThatThrownBy(() -> ProcessFreezer.freeze(zombie.pid(), Duration.ofSeconds(5)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("exited");
            assertThat(ProcessFreezer.isStopped(zombie.pid())).isFalse();
        } finally {
            parent.destroyForcibly();
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

    private static Process spinner(int threads) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process process = new ProcessBuilder(
                        java, "-cp", System.getProperty("java.class.path"), SpinnerMain.class.getName(), "" + threads)
                .redirectErrorStream(true)
                .start();
        BufferedReader out =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (!"SPINNING".equals(line)) {
            process.destroyForcibly();
            throw new IllegalStateException("spinner did not start: " + line);
        }
        return process;
    }
}
