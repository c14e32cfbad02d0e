package dev.fencing.verify;

import static dev.fencing.verify.ResourceUse.NONE;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.harness.Html;
import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.Checker;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.HistoryEntry;
import dev.fencing.verify.checker.HistoryEntry.Function;
import dev.fencing.verify.checker.HistoryEntry.Type;
import dev.fencing.verify.checker.Observed;
import dev.fencing.verify.checker.Violation;
import dev.fencing.verify.checker.ViolationKind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The JSON summary, the table and the HTML timeline of two small hand-made runs. */
class ReportsTest {
    private static final long T = 1_700_000_000_000L;

    /** Writer 1 (token 5) paused before its write; writer 2 wrote under 6; then writer 1's write landed (control). */
    private static RunResult run(Mode mode, boolean staleWriteLanded) {
        List<HistoryEntry> entries = List.of(
                new HistoryEntry(
                        Type.INVOKE, Function.APPEND, 1_000_001, 1, "r1", 5, T, "update", null, null, null, null),
                new HistoryEntry(
                        Type.INVOKE,
                        Function.APPEND,
                        2_000_001,
                        2,
                        "r1",
                        6,
                        T + 3_000,
                        "plain",
                        null,
                        null,
                        null,
                        null),
                new HistoryEntry(
                        Type.OK, Function.APPEND, 2_000_001, 2, "r1", 6, T + 3_010, null, null, null, null, null),
                staleWriteLanded
                        ? new HistoryEntry(
                                Type.OK,
                                Function.APPEND,
                                1_000_001,
                                1,
                                "r1",
                                5,
                                T + 4_000,
                                null,
                                null,
                                null,
                                null,
                                null)
                        : new HistoryEntry(
                                Type.FAIL,
                                Function.APPEND,
                                1_000_001,
                                1,
                                "r1",
                                5,
                                T + 4_000,
                                null,
                                null,
                                null,
                                null,
                                "rejected: stored token 6"));
        History history = History.of(entries);
        Observed observed = new Observed(
                Map.of("r1", staleWriteLanded ? List.of(2_000_001L, 1_000_001L) : List.of(2_000_001L)),
                Map.of(),
                List.of());
        Map<FaultKind, Integer> counted = new EnumMap<>(FaultKind.class);
        for (FaultKind kind : FaultKind.values()) {
            counted.put(kind, kind == FaultKind.PAUSE ? 1 : 0);
        }
        return new RunResult(
                mode,
                Resource.POSTGRES,
                42,
                Checker.check(history, observed, Checker.Options.DEFAULT),
                history,
                List.of(
                        new Fault(FaultKind.PAUSE, "writer 1", 1, T + 100, T + 3_900, true, "SIGSTOP 3.8s"),
                        new Fault(
                                FaultKind.LEADER_KILL,
                                "ZooKeeper server 2",
                                0,
                                T + 1_000,
                                T + 3_000,
                                true,
                                "re-elected")),
                counted,
                T,
                T + 5_000,
                List.of(
                        new ResourceSample(
                                T, new ResourceUse(100_000_000, 120, 80), new ResourceUse(16_000_000, 40, 30), NONE),
                        new ResourceSample(
                                T + 5_000,
                                new ResourceUse(101_000_000, 121, 81),
                                new ResourceUse(17_000_000, 41, 31),
                                NONE)),
                List.of(),
                Path.of("target/somewhere"));
    }

    private static RunResult with(RunResult run, List<Violation> violations, List<String> notes) {
        CheckResult c = run.check();
        return new RunResult(
                run.mode(),
                run.resource(),
                run.seed(),
                new CheckResult(
                        c.operations(),
                        c.ok(),
                        c.failed(),
                        c.indeterminate(),
                        c.recordsProduced(),
                        c.recordsApplied(),
                        c.recordsDeadLettered(),
                        c.recordsDropped(),
                        c.lostAcknowledged(),
                        c.duplicated(),
                        violations),
                run.history(),
                run.faults(),
                run.counted(),
                run.startMillis(),
                run.endMillis(),
                run.samples(),
                notes,
                run.directory());
    }

    @Test
    void theVerdictPassesACleanFencedRunBesideAControlRunWhereAStaleWriteLanded() {
        assertThat(VerifyExperiment.failures(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true))))
                .isEmpty();
        assertThat(VerifyExperiment.failures(List.of(run(Mode.FENCED, true), run(Mode.CONTROL, true))))
                .singleElement()
                .asString()
                .startsWith("FAILED: the fenced run broke 1 times");
    }

    @Test
    void aControlRunWhoseOnlyViolationsFollowFromThePlainConsumersSettingsProvesNothing() {
        RunResult control = with(
                run(Mode.CONTROL, false),
                List.of(
                        new Violation(ViolationKind.RECORD_UNSTAMPED_APPLIED, "r1", List.of(7L), "no token"),
                        new Violation(ViolationKind.RECORD_DUPLICATE, "r1", List.of(8L), "applied twice")),
                List.of());

        assertThat(VerifyExperiment.failures(List.of(run(Mode.FENCED, false), control)))
                .singleElement()
                .asString()
                .contains("landed no stale write and applied no stale record");
    }

    @Test
    void aReadWriteLockControlRunMustReturnAStaleReadAStaleWriteAloneProvesNothingAboutReads() {
        RunResult staleWriteOnly = rwLock(with(
                run(Mode.CONTROL, false),
                List.of(new Violation(ViolationKind.TOKEN_ORDER, "r1", List.of(7L, 8L), "late write")),
                List.of()));
        RunResult staleRead = rwLock(with(
                run(Mode.CONTROL, false),
                List.of(new Violation(ViolationKind.STALE_READ, "r1", List.of(9L, 8L), "missed op 8")),
                List.of()));
        RunResult fenced = rwLock(run(Mode.FENCED, false));

        assertThat(VerifyExperiment.failures(List.of(fenced, staleWriteOnly)))
                .singleElement()
                .asString()
                .contains("returned no stale read");
        assertThat(VerifyExperiment.failures(List.of(fenced, staleRead))).isEmpty();
        assertThat(VerifyExperiment.staleViolations(staleRead)).isEqualTo(1);
    }

    private static RunResult rwLock(RunResult run) {
        return new RunResult(
                run.mode(),
                Resource.RWLOCK,
                run.seed(),
                run.check(),
                run.history(),
                run.faults(),
                run.counted(),
                run.startMillis(),
                run.endMillis(),
                run.samples(),
                run.notes(),
                run.directory());
    }

    @Test
    void aRunThatMissedAFaultMinimumOrLostAWriterFails() {
        RunResult fenced = with(
                run(Mode.FENCED, false),
                List.of(),
                List.of("not every fault reached its minimum within 30s: pause 3/10"));

        assertThat(VerifyExperiment.failures(List.of(fenced, run(Mode.CONTROL, true))))
                .singleElement()
                .asString()
                .isEqualTo("FAILED: the fenced run did not go as planned: not every fault reached its minimum within"
                        + " 30s: pause 3/10");
    }

    @Test
    void theJsonSummaryHasExactlyTheKeysScriptsRead() {
        String json = JsonSummary.of(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true)));

        assertThat(json.strip())
                .isEqualTo("{\"runs\":[{\"mode\":\"fenced\",\"seed\":42,\"operations\":2,\"ok\":1,\"failed\":1,"
                        + "\"indeterminate\":0,\"faults\":{\"pause\":1,\"partition\":0,\"leaderKill\":0,\"backendKill\":0,"
                        + "\"consumerCrash\":0,\"rebalance\":0,\"sessionExpiry\":0,\"readPause\":0},\"violations\":0,\"lostAcknowledged\":0,\"duplicated\":0,"
                        + "\"recordsProduced\":0,\"recordsApplied\":0,\"recordsDeadLettered\":0,\"recordsDropped\":0,"
                        + "\"resource\":\"postgres\"},"
                        + "{\"mode\":\"control\",\"seed\":42,\"operations\":2,\"ok\":2,\"failed\":0,\"indeterminate\":0,"
                        + "\"faults\":{\"pause\":1,\"partition\":0,\"leaderKill\":0,\"backendKill\":0,\"consumerCrash\":0,"
                        + "\"rebalance\":0,\"sessionExpiry\":0,\"readPause\":0},\"violations\":1,\"lostAcknowledged\":0,\"duplicated\":0,"
                        + "\"recordsProduced\":0,\"recordsApplied\":0,\"recordsDeadLettered\":0,\"recordsDropped\":0,"
                        + "\"resource\":\"postgres\"}]}");
    }

    @Test
    void theTableSpellsOutEachViolation() {
        String table = SummaryTable.of(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true)));

        assertThat(table)
                .contains("fenced")
                .contains("control")
                .containsPattern("violations\\s+0\\s+1")
                .containsPattern("TOKEN_ORDER\\s+0\\s+1")
                .contains(
                        "- TOKEN_ORDER: in the list of r1, op 1000001 (client 1, r1, token 5) at position 2 comes after"
                                + " op 2000001 (client 2, r1, token 6) at position 1");
    }

    @Test
    void theTimelineHasALanePerWriterFaultBandsAndMarkedViolations() {
        VerifySettings settings = settings();

        String html = HtmlTimeline.of(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true)), settings);

        assertThat(html)
                .startsWith("<!DOCTYPE html>")
                .doesNotContain("<script")
                .contains(">writer 1</text>", ">writer 2</text>")
                .contains("fill=\"rgba(123,31,162,0.25)\"") // the pause band on writer 1's lane
                .contains(">leaderKill</text>") // a band across the lanes
                .contains("fill=\"#90a4ae\"") // the refused write
                .contains("stroke=\"#d50000\"") // an operation in a violation
                .contains("<title>violation 1</title>")
                .contains("TOKEN_ORDER: in the list of r1");
    }

    @Test
    void theReportSaysWhatEachViolationKindFoundMeans() {
        String html = HtmlTimeline.of(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true)), settings());
        String clean = HtmlTimeline.of(List.of(run(Mode.FENCED, false)), settings());

        assertThat(html)
                .contains("<li class=\"v\">TOKEN_ORDER: "
                        + Html.escape(ViolationKind.TOKEN_ORDER.description())
                        + "</li>")
                .doesNotContain("<li class=\"v\">LOST_ACKNOWLEDGED: ");
        assertThat(clean).doesNotContain("TOKEN_ORDER: ");
    }

    @Test
    void theLegendShowsEveryMarkTheTimelineDraws() {
        String html = HtmlTimeline.of(List.of(run(Mode.FENCED, false), run(Mode.CONTROL, true)), settings());
        String legend = html.substring(
                html.indexOf("<p class=\"legend\">"), html.indexOf("</p>", html.indexOf("<p class=\"legend\">")));

        // every bar and every point mark drawn, its colour and shape as the legend draws it
        List<String> drawn = new ArrayList<>(all("(<rect class=\"[a-z -]+\" [^>]*>)", html));
        drawn.addAll(all("<g class=\"[a-z-]+\">(<[a-z]+ [^>]*>)", html));
        assertThat(drawn).hasSizeGreaterThan(10);
        assertThat(drawn)
                .filteredOn(mark -> !mark.contains("hsl(")) // a token's own hue; the legend shows one
                .allSatisfy(mark -> assertThat(shape(legend)).contains(shape(mark)));
        assertThat(legend).contains("hsl(", "violation", "without a token header", "not counted");
    }

    /** Every match of {@code regex}'s first group in {@code text}. */
    private static List<String> all(String regex, String text) {
        List<String> found = new ArrayList<>();
        Matcher matcher = Pattern.compile(regex).matcher(text);
        while (matcher.find()) {
            found.add(matcher.group(1));
        }
        return found;
    }

    /** A mark's drawing without its place: numbers and path coordinates blanked, its CSS class dropped. */
    private static String shape(String element) {
        return element.replaceAll("class=\"[^\"]*\" ", "")
                .replaceAll("=\"-?[0-9.]+\"", "=\"\"")
                .replaceAll("d=\"M-?[0-9.]+ -?[0-9.]+ ", "d=\"M ");
    }

    private static VerifySettings settings() {
        return new VerifySettings(
                null,
                null,
                null,
                null,
                null,
                null,
                Resource.POSTGRES,
                2,
                1,
                Duration.ofSeconds(30),
                42,
                EnumSet.allOf(FaultKind.class),
                List.of(Mode.FENCED, Mode.CONTROL),
                Duration.ofSeconds(2),
                null,
                Path.of("r.html"),
                Path.of("out"),
                false);
    }

    @Test
    void aFencedRunThatAcknowledgedNoWriteProvesNothing() {
        // given: a fenced run alone (--mode fenced) whose history is empty, as when every writer failed to lock
        RunResult empty = with(run(Mode.FENCED, false), List.of(), List.of());
        RunResult nothing = new RunResult(
                empty.mode(),
                empty.resource(),
                empty.seed(),
                new CheckResult(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, List.of()),
                empty.history(),
                empty.faults(),
                empty.counted(),
                empty.startMillis(),
                empty.endMillis(),
                empty.samples(),
                empty.notes(),
                empty.directory());

        // when / then
        assertThat(VerifyExperiment.failures(List.of(nothing)))
                .singleElement()
                .asString()
                .contains("proves nothing");
        assertThat(VerifyExperiment.failures(List.of(run(Mode.FENCED, false)))).isEmpty();
    }
}
