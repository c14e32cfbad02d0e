package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChildFleetTest {
    @TempDir
    Path logs;

    /** A child that ignores its standard input and sleeps: it stops only when killed. */
    private ChildJvm sleeper(int id) {
        return ChildJvm.launch(
                "sleeper " + id,
                id,
                List.of("sleep", "30"),
                Map.of(),
                logs.resolve("sleeper-" + id + ".log"),
                line -> {});
    }

    @Test
    void aChildThatDoesNotStopInTimeIsNamedAndKilledWithTheOthers() {
        ChildFleet fleet = ChildFleet.start(2, this::sleeper);

        List<ChildJvm> late = fleet.stop(Duration.ofMillis(100));

        assertThat(late).extracting(ChildJvm::id).containsExactly(1, 2);
        assertThat(fleet.exited()).hasSize(2);
        assertThat(fleet.all()).noneMatch(ChildJvm::isAlive);
    }

    @Test
    void whenOneChildCannotStartTheOnesAlreadyStartedAreStopped() {
        ChildJvm[] first = new ChildJvm[1];

        assertThatThrownBy(() -> ChildFleet.start(2, id -> {
                    if (id == 2) {
                        throw new HarnessException("child 2 cannot start");
                    }
                    first[0] = sleeper(id);
                    return first[0];
                }))
                .hasMessage("child 2 cannot start");

        assertThat(first[0].isAlive()).isFalse();
    }
}
