package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.testsupport.NetworkNamespace;
import dev.fencing.verify.checker.Violation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The redis resource, CI-sized: both runs on embedded servers (ZooKeeper and Redis) with the same seed and fault
 * schedule. Each run goes on until it had 5 pauses, each counted only once another writer took the lock over and
 * wrote the resource while the paused holder still held its token (so its late write is stale for certain), a
 * partition from ZooKeeper (where the machine allows network namespaces) and a leader kill. The fenced run must
 * keep every property and refuse some writes; the control run's plain commands must land stale writes, or the
 * checker proved nothing. No timing is asserted.
 */
class VerifyRedisIT {
    private static final Map<FaultKind, Integer> MINIMUM = Map.of(
            FaultKind.PAUSE, 5,
            FaultKind.PARTITION, 1,
            FaultKind.LEADER_KILL, 1);

    @Test
    void fencedRedisWritesKeepEveryPropertyUnderPausesThatLandStaleWritesWithoutTheFence() throws Exception {
        Path target = Path.of("target");
        Files.createDirectories(target);
        VerifySettings settings = new VerifySettings(
                null,
                null,
                null,
                null,
                null,
                null,
                Resource.REDIS,
                4,
                2,
                Duration.ofSeconds(10),
                20_261_127,
                Resource.REDIS.faults(),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                target.resolve("verify-redis-it.json"),
                target.resolve("verify-redis-it-report.html"),
                target.resolve("verify-redis-it-runs"),
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
        assertThat(fenced.check().failed())
                .as("stale writes fencing-redis refused in the fenced run")
                .isPositive();
        assertThat(VerifyExperiment.staleViolations(control))
                .as("stale writes the control run's plain commands landed")
                .isPositive();
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
            assertThat(run.check().ok()).isPositive();
        }
        assertThat(VerifyExperiment.failures(runs))
                .as("what verify/run would say")
                .isEmpty();
    }
}
