package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.ProcessFreezer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pause protocol against a shell child standing in for a worker: it answers {@code ARM} with {@code POINT},
 * waits for {@code GO} and then says {@code WENT}; every other command it echoes.
 */
class PauseInjectorTest {
    private static final String CHILD = "while read cmd; do case \"$cmd\" in"
            + " ARM*) echo POINT; read go; echo WENT;;"
            + " *) echo \"GOT $cmd\";;"
            + " esac; done";
    private static final String DEAF_CHILD = "while read cmd; do echo \"GOT $cmd\"; done";

    @TempDir
    Path directory;

    private final List<ChildJvm> children = new CopyOnWriteArrayList<>();
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final PauseInjector<String> pauses = new PauseInjector<>(id -> children.get(id - 1));

    private ChildJvm launch(String script) {
        ChildJvm child = ChildJvm.launch(
                "worker 1", 1, List.of("sh", "-c", script), Map.of(), directory.resolve("worker.log"), line -> {
                    lines.add(line);
                    if (line.equals("POINT")) {
                        pauses.onPoint(1, line);
                    }
                });
        children.add(child);
        return child;
    }

    @Test
    void aPausedChildIsStoppedBeforeItIsSentOnAndGoesOnOnlyAfterTheTakeover() throws InterruptedException {
        try (ChildJvm child = launch(CHILD)) {
            // given
            assertThat(pauses.armAndAwait(1, "READ_WRITE", Duration.ofSeconds(10)))
                    .contains("POINT");
            AtomicBoolean stoppedWhenSaid = new AtomicBoolean();
            AtomicBoolean wentBeforeTakeover = new AtomicBoolean();

            // when
            PauseInjector.Pause<String> pause = pauses.freezeUntilTakenOver(
                    1,
                    Duration.ofMillis(300),
                    Duration.ofSeconds(5),
                    () -> stoppedWhenSaid.set(ProcessFreezer.isStopped(child.pid())),
                    wait -> {
                        wentBeforeTakeover.set(lines.contains("WENT"));
                        return Optional.of("taken over");
                    });

            // then: every thread stopped before it was told it was, and its GO waited in the pipe until SIGCONT
            assertThat(stoppedWhenSaid).isTrue();
            assertThat(wentBeforeTakeover).isFalse();
            assertThat(pause.takeover()).contains("taken over");
            assertThat(pause.endMillis() - pause.startMillis()).isGreaterThanOrEqualTo(300);
            await().atMost(Duration.ofSeconds(10)).until(() -> lines.contains("WENT"));
            assertThat(ProcessFreezer.isStopped(child.pid())).isFalse();
        }
    }

    @Test
    void aChildThatNeverReachesItsPointIsDisarmed() throws InterruptedException {
        try (ChildJvm child = launch(DEAF_CHILD)) {
            // when
            Optional<String> at = pauses.armAndAwait(1, "WRITE_PUBLISH", Duration.ofMillis(300));

            // then
            assertThat(at).isEmpty();
            await().atMost(Duration.ofSeconds(10))
                    .untilAsserted(() -> assertThat(lines).containsExactly("GOT ARM WRITE_PUBLISH", "GOT DISARM"));
        }
    }

    @Test
    void aPointNobodyWaitsForIsSentOnAtOnce() {
        try (ChildJvm child = launch(DEAF_CHILD)) {
            // when: it reports a point after its waiter gave up
            pauses.onPoint(1, "POINT");

            // then: it does not wait out its own limit holding a lock
            await().atMost(Duration.ofSeconds(10)).until(() -> lines.contains("GOT GO"));
        }
    }

    @Test
    void aChildThatIsNotTakenOverIsThawedAfterTheLongestWait() throws InterruptedException {
        try (ChildJvm child = launch(CHILD)) {
            assertThat(pauses.armAndAwait(1, "READ_WRITE", Duration.ofSeconds(10)))
                    .isPresent();

            // when
            PauseInjector.Pause<String> pause = pauses.freezeUntilTakenOver(
                    1, Duration.ofMillis(100), Duration.ofMillis(200), () -> {}, wait -> Optional.empty());

            // then
            assertThat(pause.takeover()).isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> lines.contains("WENT"));
        }
    }
}
