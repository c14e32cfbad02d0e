package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultScheduleTest {

    private static List<FaultSchedule.Planned> first(long seed, FaultKind kind, int count) {
        FaultSchedule schedule = new FaultSchedule(seed);
        List<FaultSchedule.Planned> planned = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            planned.add(schedule.next(kind));
        }
        return planned;
    }

    @Test
    void theSameSeedGivesTheSameScheduleWhateverOtherKindsAskFor() {
        FaultSchedule interleaved = new FaultSchedule(42);
        List<FaultSchedule.Planned> pauses = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            pauses.add(interleaved.next(FaultKind.PAUSE));
            interleaved.next(FaultKind.PARTITION); // another lane's draws do not shift this one's
        }

        assertThat(pauses).isEqualTo(first(42, FaultKind.PAUSE, 20));
    }

    @Test
    void anotherSeedGivesAnotherSchedule() {
        assertThat(first(43, FaultKind.PAUSE, 20)).isNotEqualTo(first(42, FaultKind.PAUSE, 20));
    }

    @Test
    void faultsComeInOrderAroundTheirKindsCadence() {
        List<FaultSchedule.Planned> pauses = first(7, FaultKind.PAUSE, 50);

        assertThat(pauses.get(0).atMillis()).isEqualTo(2_000);
        for (int i = 1; i < pauses.size(); i++) {
            long gap = pauses.get(i).atMillis() - pauses.get(i - 1).atMillis();
            assertThat(gap).isBetween(1_875L, 3_125L); // 2.5 s +- 25%
            assertThat(pauses.get(i).index()).isEqualTo(i);
        }
        assertThat(pauses)
                .extracting(FaultSchedule.Planned::point)
                .containsOnly(
                        dev.fencing.verify.client.PausePoint.LOCK_WRITE,
                        dev.fencing.verify.client.PausePoint.WRITE_PUBLISH);
    }
}
