package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class WritersTest {
    private static final boolean[] ALL_ALIVE = {true, true, true, true};

    @Test
    void aFaultThatNeedsATakeoverLeavesEachElectionAFreeParticipantToTakeItOver() {
        // given: four writers in two elections (writers 1 and 3 in r1, 2 and 4 in r2), writer 4 partitioned
        boolean[] busy = {false, false, false, true};

        // when: a pause aimed at writer 2, the only other participant of r2
        OptionalInt picked = Writers.pick(busy, ALL_ALIVE, 2, 1, true);

        // then: frozen too, nobody could take r2 over and neither fault would count; writer 3 is taken instead
        assertThat(picked).hasValue(3);
    }

    @Test
    void aFaultThatNeedsNoTakeoverMayTakeTheLastFreeParticipant() {
        boolean[] busy = {false, false, false, true};

        assertThat(Writers.pick(busy, ALL_ALIVE, 2, 1, false)).hasValue(2);
    }

    @Test
    void noWriterIsTakenWhenEveryElectionWouldBeLeftWithoutAFreeParticipant() {
        boolean[] busy = {true, false, false, true};

        assertThat(Writers.pick(busy, ALL_ALIVE, 2, 1, true)).isEmpty();
        assertThat(Writers.pick(busy, new boolean[] {true, true, false, false}, 1, 1, true))
                .as("one lock all writers contend for: writer 2 and one free writer, who is dead")
                .isEmpty();
    }

    @Test
    void theGroupsAreTheElectionsTheWritersTakePartInWhenThereAreFewerThanResources() {
        // given: the default election run, six writers and four resources: three elections of two participants
        // (writer c in that of r<1 + (c - 1) % 3>), so writers 2 and 5 are r2's participants; writer 2 is paused
        VerifySettings settings = VerifyCommand.parse("--resource", "election");
        int groups = Writers.groups(settings);
        boolean[] busy = {false, true, false, false, false, false};
        boolean[] alive = {true, true, true, true, true, true};

        // when: a partition aimed at writer 5
        OptionalInt picked = Writers.pick(busy, alive, groups, 4, true);

        // then: cut off too, nobody could take r2 over; writer 6 (r3, with writer 3 free) is taken instead
        assertThat(picked).hasValue(6);
        assertThat(groups).isEqualTo(ElectionWorkload.elections(settings.resources(), settings.clients()));
        assertThat(Writers.groups(VerifyCommand.parse("--resource", "redis")))
                .as("one lock per resource, which any writer may take")
                .isEqualTo(1);
    }
}
