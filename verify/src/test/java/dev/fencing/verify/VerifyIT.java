package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.testsupport.NetworkNamespace;
import dev.fencing.verify.checker.Violation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The CI-sized attack on the whole chain, both runs on embedded servers with the same seed and fault schedule:
 * the fenced run must keep every property the checker knows, and the control run (no fencing) must break some,
 * or the checker proved nothing. Each run must have had the minimum of faults: 10 pauses past session
 * expiry, 3 partitions from ZooKeeper (where the machine allows network namespaces: CI's does), a leader kill, 2
 * backend kills, 2 consumer crashes and a rebalance. No timing is asserted: the runs go on until the minimums are
 * reached.
 */
class VerifyIT {
    private static final Map<FaultKind, Integer> MINIMUM = Map.of(
            FaultKind.PAUSE, 10,
            FaultKind.PARTITION, 3,
            FaultKind.LEADER_KILL, 1,
            FaultKind.BACKEND_KILL, 2,
            FaultKind.CONSUMER_CRASH, 2,
            FaultKind.REBALANCE, 1);

    @Test
    void theFencedChainKeepsEveryPropertyUnderTheFaultsThatBreakTheUnfencedOne() throws Exception {
        Path target = Path.of("target");
        Files.createDirectories(target);
        VerifySettings settings = new VerifySettings(
                null,
                null,
                null,
                null,
                null,
                null,
                Resource.POSTGRES,
                VerifySettings.DEFAULT_CLIENTS,
                VerifySettings.DEFAULT_RESOURCES,
                Duration.ofSeconds(30),
                20_240_611,
                EnumSet.allOf(FaultKind.class),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                target.resolve("verify-it.json"),
                target.resolve("verify-it-report.html"),
                target.resolve("verify-it-runs"),
                false);

        // when
        List<RunResult> runs = VerifyExperiment.runAll(settings, System.out);
        System.out.print(SummaryTable.of(runs));
        Files.writeString(settings.htmlFile(), HtmlTimeline.of(runs, settings));
        Files.writeString(settings.jsonFile(), JsonSummary.of(runs));

        // then
        RunResult fenced = runs.get(0);
        RunResult control = runs.get(1);
        assertThat(fenced.check().violations())
                .as(
                        "violations of the fenced run (timeline: %s)",
                        settings.htmlFile().toAbsolutePath())
                .extracting(Violation::toString)
                .isEmpty();
        assertThat(control.check().violations())
                .as("the control run must break what fencing protects, or the checker proves nothing")
                .isNotEmpty();
        boolean partitions = NetworkNamespace.unavailableReason().isEmpty();
        for (RunResult run : runs) {
            MINIMUM.forEach((kind, minimum) -> {
                if (kind != FaultKind.PARTITION || partitions) {
                    assertThat(run.counted().get(kind))
                            .as(
                                    "%s faults of the %s run",
                                    kind.jsonName(), run.mode().label())
                            .isGreaterThanOrEqualTo(minimum);
                }
            });
            assertThat(run.notes())
                    .as("what the %s run noticed", run.mode().label())
                    .isEmpty();
            assertThat(run.check().operations()).isPositive();
        }
        assertThat(fenced.check().failed())
                .as("stale writes the fence refused in the fenced run")
                .isPositive();
        assertThat(fenced.check().recordsDropped())
                .as("stale records the fenced consumer refused (not counting the unstamped ones)")
                .isPositive();
        assertThat(VerifyExperiment.staleViolations(control))
                .as("stale writes landed and stale records applied in the control run")
                .isPositive();
        assertThat(VerifyExperiment.failures(runs))
                .as("what verify/run would say")
                .isEmpty();
    }
}
