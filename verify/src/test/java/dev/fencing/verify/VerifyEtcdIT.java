package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.testsupport.NetworkNamespace;
import dev.fencing.verify.checker.Violation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The chain with its writers' locks on etcd ({@code --locks etcd}), short: both runs on embedded servers (a
 * 3-member etcd cluster, PostgreSQL, Kafka) with the same seed, pauses past the writers' 2 s etcd leases,
 * partitions of a writer from etcd alone (where the machine allows network namespaces) and a kill of the etcd
 * leader, and its consumer members key-parallel (concurrency 8), crashed and rebalanced. Each pause or partition
 * counts only once another writer took the lock over and wrote the resource while the cut-off holder still held its
 * token, so its late write is stale for certain: the fenced run must keep every property and refuse some writes,
 * the control run must land stale writes, or the checker proved nothing. Backend kills run in {@code verify/run
 * --locks etcd}; no timing is asserted.
 */
class VerifyEtcdIT {
    /** Its consumer members are key-parallel (VerifyIT's are serial), and crashed and rebalanced. */
    private static final int KEY_PARALLEL = 8;

    @Test
    void writersWithEtcdLocksAndKeyParallelConsumersKeepEveryPropertyUnderFaultsThatLandStaleWritesWithoutTheFence()
            throws Exception {
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
                4,
                2,
                Duration.ofSeconds(10),
                20_261_127,
                EnumSet.of(
                        FaultKind.PAUSE,
                        FaultKind.PARTITION,
                        FaultKind.LEADER_KILL,
                        FaultKind.CONSUMER_CRASH,
                        FaultKind.REBALANCE),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                target.resolve("verify-etcd-it.json"),
                target.resolve("verify-etcd-it-report.html"),
                target.resolve("verify-etcd-it-runs"),
                false,
                LockService.ETCD,
                KEY_PARALLEL);

        // when
        List<RunResult> runs = VerifyExperiment.runAll(settings, System.out);
        System.out.print(SummaryTable.of(runs));
        Files.writeString(settings.htmlFile(), HtmlTimeline.of(runs, settings));

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
                .as("stale writes the fence refused in the fenced run")
                .isPositive();
        assertThat(VerifyExperiment.staleViolations(control))
                .as("stale writes landed and stale records applied in the control run")
                .isPositive();
        boolean partitions = NetworkNamespace.unavailableReason().isEmpty();
        for (RunResult run : runs) {
            if (partitions) {
                assertThat(run.counted().get(FaultKind.PARTITION))
                        .as("partitions from etcd of the %s run", run.mode().label())
                        .isGreaterThanOrEqualTo(FaultKind.PARTITION.minimum());
            }
            assertThat(run.counted().get(FaultKind.PAUSE))
                    .as("pauses of the %s run", run.mode().label())
                    .isGreaterThanOrEqualTo(FaultKind.PAUSE.minimum());
            assertThat(run.counted().get(FaultKind.CONSUMER_CRASH))
                    .as(
                            "key-parallel consumer crashes of the %s run",
                            run.mode().label())
                    .isGreaterThanOrEqualTo(FaultKind.CONSUMER_CRASH.minimum());
            assertThat(run.counted().get(FaultKind.REBALANCE))
                    .as("rebalances of the %s run", run.mode().label())
                    .isGreaterThanOrEqualTo(FaultKind.REBALANCE.minimum());
            assertThat(run.counted().get(FaultKind.LEADER_KILL))
                    .as("etcd leader kills of the %s run", run.mode().label())
                    .isGreaterThanOrEqualTo(1);
            assertThat(run.notes())
                    .as("what the %s run noticed", run.mode().label())
                    .isEmpty();
        }
        assertThat(VerifyExperiment.failures(runs))
                .as("what verify/run would say")
                .isEmpty();
    }
}
