package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.harness.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

class InventoryVerdictTest {

    private static RunResult run(Mode mode, List<String> violations, long... takeoverTokens) {
        InvariantChecker.InvariantReport report =
                new InvariantChecker.InvariantReport(10, 20, 0, violations.isEmpty() ? 0 : 1, List.of(), 0, violations);
        List<RunRecorder.Pause> pauses = java.util.Arrays.stream(takeoverTokens)
                .mapToObj(next -> new RunRecorder.Pause(1, "sku-1", 3, WorkerEvent.PausePoint.READ_WRITE, 0, 10, next))
                .toList();
        return new RunResult(mode, report, 0, 0, 10, 1.0, 2, 0, 1_000, List.of(), pauses);
    }

    @Test
    void aRunWhosePausesNeverLandedProvesNothingAndFails() {
        // given: pauses were injected, but nobody took the SKU over during any of them
        Verdict verdict = InventoryVerdict.of(List.of(run(Mode.FENCED, List.of(), 0, 0)), 1);

        assertThat(verdict.passed()).isFalse();
        assertThat(verdict.failures())
                .containsExactly("The fenced run proves nothing: 0 of its 2 pauses landed (a newer token wrote the"
                        + " SKU while the paused worker was frozen), fewer than --min-landed-pauses 1; give it a"
                        + " longer --duration, fewer --skus or more frequent pauses (--pause-every).");
    }

    @Test
    void aRunWithoutAnyPauseFailsToo() {
        assertThat(InventoryVerdict.of(List.of(run(Mode.UNFENCED, List.of())), 1)
                        .passed())
                .isFalse();
    }

    @Test
    void passesWhenEveryRunHasEnoughLandedPausesAndTheFencedRunHolds() {
        Verdict verdict = InventoryVerdict.of(
                List.of(run(Mode.UNFENCED, List.of("broken"), 4), run(Mode.FENCED, List.of(), 4, 0, 7)), 1);

        assertThat(verdict.passed()).isTrue();
        assertThat(verdict.passedLine())
                .isEqualTo("every run had landed pauses and the fenced run kept every invariant");
        assertThat(InventoryVerdict.of(List.of(run(Mode.FENCED, List.of(), 4, 0, 7)), 3)
                        .passed())
                .isFalse();
    }

    @Test
    void aRunWhosePausesAllLandedAtOnePointPassesButSaysWhichFenceItDidNotTry() {
        // given: every landed pause fell between read and write; none between write and publish
        Verdict verdict = InventoryVerdict.of(List.of(run(Mode.FENCED, List.of(), 4, 7)), 1);

        assertThat(verdict.passed()).isTrue();
        assertThat(verdict.notes())
                .containsExactly("note: no pause of the fenced run landed between a write and its publish, so it"
                        + " tested no late record; give it a longer --duration or more frequent pauses"
                        + " (--pause-every).");
    }

    @Test
    void aBrokenFencedRunFailsButABrokenUnfencedRunIsTheExpectedHarm() {
        assertThat(InventoryVerdict.of(List.of(run(Mode.FENCED, List.of("broken"), 4)), 1)
                        .failures())
                .singleElement()
                .asString()
                .startsWith("The fenced run broke an invariant");
        assertThat(InventoryVerdict.of(List.of(run(Mode.LEASE_CHECK, List.of("broken"), 4)), 1)
                        .passed())
                .isTrue();
    }
}
