package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class PauseScheduleTest {

    private static List<WorkerEvent.PausePoint> firstSix(Mode mode) {
        return IntStream.range(0, 6)
                .mapToObj(i -> PauseSchedule.pointOf(mode, i))
                .toList();
    }

    @Test
    void alternatesBetweenBeforeTheWriteAndBeforeThePublish() {
        assertThat(firstSix(Mode.UNFENCED))
                .isEqualTo(firstSix(Mode.FENCED))
                .containsExactly(
                        WorkerEvent.PausePoint.READ_WRITE,
                        WorkerEvent.PausePoint.WRITE_PUBLISH,
                        WorkerEvent.PausePoint.READ_WRITE,
                        WorkerEvent.PausePoint.WRITE_PUBLISH,
                        WorkerEvent.PausePoint.READ_WRITE,
                        WorkerEvent.PausePoint.WRITE_PUBLISH);
    }

    @Test
    void inLeaseCheckModeTheFirstPauseFallsAfterTheCheckAndTheSecondBeforeIt() {
        assertThat(firstSix(Mode.LEASE_CHECK))
                .containsExactly(
                        WorkerEvent.PausePoint.AFTER_LEASE_CHECK,
                        WorkerEvent.PausePoint.READ_WRITE,
                        WorkerEvent.PausePoint.WRITE_PUBLISH,
                        WorkerEvent.PausePoint.AFTER_LEASE_CHECK,
                        WorkerEvent.PausePoint.READ_WRITE,
                        WorkerEvent.PausePoint.WRITE_PUBLISH);
    }
}
