package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.verify.checker.Violation;
import dev.fencing.verify.checker.ViolationKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The election resource, CI-sized: both runs on embedded servers (ZooKeeper and PostgreSQL) with the same seed and
 * fault schedule, four writers in two elections. Each run goes on until its fault minimums are reached (pauses of
 * leaders past their session, counted only once another participant was elected and wrote, partitions from
 * ZooKeeper where the machine allows network namespaces, a leader kill, session expiries of leaders that go on
 * writing: one on the client side as Curator's {@code KillSession} does, one on the server). The fenced run must keep both the fence
 * (no write of a term after one of a greater term) and the local contract (no term read valid after the next
 * term's grant), and refuse some late writes; the control run's plain UPDATEs must land a late write, or the
 * checker proved nothing. No timing is asserted.
 *
 * <p>The read/write-lock resource runs briefly on the same servers: two clients reading and writing one resource
 * under its read/write lock, until three readers were paused between read and return while a writer wrote. The
 * fenced run's readers, checking the stored token against their read token, must return no stale read and discard
 * some; the control run's readers, which do not check, must return a stale read.
 */
class VerifyElectionIT {
    private static final Path TARGET = Path.of("target");
    private static VerifySettings electionSettings;
    private static Servers servers;

    @BeforeAll
    static void startServers() throws Exception {
        Files.createDirectories(TARGET);
        electionSettings = new VerifySettings(
                null,
                null,
                null,
                null,
                null,
                null,
                Resource.ELECTION,
                4,
                2,
                Duration.ofSeconds(10),
                20_261_127,
                Resource.ELECTION.faults(),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                TARGET.resolve("verify-election-it.json"),
                TARGET.resolve("verify-election-it-report.html"),
                TARGET.resolve("verify-election-it-runs"),
                false);
        servers = Servers.open(electionSettings, Servers.newRunId(), System.out);
    }

    @AfterAll
    static void stopServers() {
        if (servers != null) {
            servers.close();
        }
    }

    @Test
    void leadersWritingUnderTheirTermsTokenKeepTheFenceAndTheLocalContractWhereUnfencedWritesLandLate()
            throws Exception {
        VerifySettings settings = electionSettings;

        // when
        List<RunResult> runs = VerifyExperiment.runOn(settings, servers, Servers.newRunId(), System.out);
        System.out.print(SummaryTable.of(runs));
        Files.writeString(settings.htmlFile(), HtmlTimeline.of(runs, settings));
        Files.writeString(settings.jsonFile(), JsonSummary.of(runs));

        // then
        RunResult fenced = runs.get(0);
        RunResult control = runs.get(1);
        assertThat(fenced.check().violations())
                .as(
                        "violations of the fenced run, fence and local contract (timeline: %s)",
                        settings.htmlFile().toAbsolutePath())
                .extracting(Violation::toString)
                .isEmpty();
        assertThat(fenced.check().failed())
                .as("late writes of deposed leaders fencing-jdbc refused in the fenced run")
                .isPositive();
        assertThat(control.check().violationsByKind().get(ViolationKind.TOKEN_ORDER))
                .as("late writes of deposed leaders the control run's plain UPDATEs landed")
                .isPositive();
        for (RunResult run : runs) {
            assertThat(run.counted().get(FaultKind.PAUSE))
                    .as(
                            "leaders paused past their session in the %s run",
                            run.mode().label())
                    .isPositive();
            assertThat(run.counted().get(FaultKind.SESSION_EXPIRY))
                    .as(
                            "leaders' sessions expired (client side, then server side) in the %s run",
                            run.mode().label())
                    .isGreaterThanOrEqualTo(FaultKind.SESSION_EXPIRY.minimum());
            assertThat(run.notes())
                    .as("what the %s run noticed", run.mode().label())
                    .isEmpty();
            assertThat(run.check().ok()).isPositive();
        }
        assertThat(VerifyExperiment.failures(runs))
                .as("what verify/run would say")
                .isEmpty();
    }

    @Test
    void readersCheckingTheirReadTokenReturnNoStaleReadWhereReadersThatDoNotCheckReturnOne() throws Exception {
        VerifySettings settings = new VerifySettings(
                null,
                null,
                null,
                null,
                null,
                null,
                Resource.RWLOCK,
                2,
                1,
                Duration.ofSeconds(10),
                20_261_127,
                EnumSet.of(FaultKind.READ_PAUSE),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                TARGET.resolve("verify-rwlock-it.json"),
                TARGET.resolve("verify-rwlock-it-report.html"),
                TARGET.resolve("verify-rwlock-it-runs"),
                false);

        // when
        List<RunResult> runs = VerifyExperiment.runOn(settings, servers, Servers.newRunId(), System.out);
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
                .as("stale reads the fenced run's readers discarded")
                .isPositive();
        assertThat(control.check().violationsByKind().get(ViolationKind.STALE_READ))
                .as("stale reads the control run's readers returned")
                .isPositive();
        for (RunResult run : runs) {
            assertThat(run.counted().get(FaultKind.READ_PAUSE))
                    .as(
                            "readers paused between read and return while a writer wrote, %s run",
                            run.mode().label())
                    .isGreaterThanOrEqualTo(FaultKind.READ_PAUSE.minimum());
            assertThat(run.notes())
                    .as("what the %s run noticed", run.mode().label())
                    .isEmpty();
            assertThat(run.check().violationsByKind().get(ViolationKind.READ_TOKEN_WRITE))
                    .as("writes accepted under a read token, %s run", run.mode().label())
                    .isZero();
        }
        assertThat(VerifyExperiment.failures(runs))
                .as("what verify/run would say")
                .isEmpty();
    }
}
