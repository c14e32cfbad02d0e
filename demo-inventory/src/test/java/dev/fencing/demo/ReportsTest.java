package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReportsTest {

    private static RunResult run(
            Mode mode, int oversold, int lost, long rejected, long dropped, long operations, long staleAccepted) {
        List<InventorySnapshot.Order> staleWrites = java.util.stream.LongStream.range(0, staleAccepted)
                .mapToObj(i -> new InventorySnapshot.Order("sku-1", 1, 1, 1, 5, 5))
                .toList();
        InvariantChecker.InvariantReport report = new InvariantChecker.InvariantReport(
                10,
                20,
                oversold,
                lost,
                staleWrites,
                staleAccepted,
                oversold + lost > 0 ? List.of("broken") : List.of());
        WorkerEvent locked = new WorkerEvent(1_000, 1, WorkerEvent.Kind.LOCKED, "sku-1", 7, 5, 0);
        WorkerEvent rejectedWrite = new WorkerEvent(1_500, 1, WorkerEvent.Kind.REJECTED, "sku-1", 7, 8, 0);
        WorkerEvent released = new WorkerEvent(1_600, 1, WorkerEvent.Kind.RELEASED, "sku-1", 7, 0, 0);
        RunRecorder.Pause pause =
                new RunRecorder.Pause(1, "sku-1", 7, WorkerEvent.PausePoint.READ_WRITE, 1_100, 1_400, 8);
        return new RunResult(
                mode,
                report,
                rejected,
                dropped,
                operations,
                2.0,
                2,
                1_000,
                3_000,
                List.of(locked, rejectedWrite, released),
                List.of(pause));
    }

    /** Worker 1 (token 7) is frozen and not taken over; worker 2 (token 8) is frozen and taken over by token 9, ... */
    private static RunResult harmfulRun(Mode mode) {
        List<WorkerEvent> events = List.of(
                new WorkerEvent(1_000, 2, WorkerEvent.Kind.LOCKED, "sku-1", 8, 10, 0),
                new WorkerEvent(1_300, 1, WorkerEvent.Kind.LOCKED, "sku-1", 9, 10, 0), // 8's session ended
                new WorkerEvent(1_400, 1, WorkerEvent.Kind.WRITTEN, "sku-1", 9, 1, 9),
                new WorkerEvent(1_450, 1, WorkerEvent.Kind.RELEASED, "sku-1", 9, 0, 0),
                new WorkerEvent(1_700, 2, WorkerEvent.Kind.LEASE_LOST, "sku-1", 8, 0, 0),
                new WorkerEvent(1_650, 2, WorkerEvent.Kind.WRITTEN, "sku-1", 8, 2, 8), // ... and writes stale
                new WorkerEvent(1_800, 2, WorkerEvent.Kind.RELEASED, "sku-1", 8, 0, 0),
                new WorkerEvent(2_000, 1, WorkerEvent.Kind.LOCKED, "sku-2", 4, -1, 0),
                new WorkerEvent(2_000, 1, WorkerEvent.Kind.REJECTED, "sku-2", 4, 5, 1), // claim refused at read
                new WorkerEvent(2_010, 1, WorkerEvent.Kind.RELEASED, "sku-2", 4, 0, 0));
        List<RunRecorder.Pause> pauses = List.of(
                new RunRecorder.Pause(2, "sku-1", 8, WorkerEvent.PausePoint.READ_WRITE, 1_050, 1_600, 9),
                new RunRecorder.Pause(1, "sku-2", 3, WorkerEvent.PausePoint.WRITE_PUBLISH, 2_100, 2_500, 0));
        // the checker found token 8's order stale in the database (it committed after token 9's)
        InvariantChecker.InvariantReport report = new InvariantChecker.InvariantReport(
                2,
                3,
                0,
                1,
                List.of(new InventorySnapshot.Order("sku-1", 2, 8, 2, 10, 9)),
                0,
                List.of("1 stale write(s) accepted"));
        return new RunResult(mode, report, 1, 0, 3, 2.0, 2, 1_000, 3_000, events, pauses);
    }

    @Test
    void writesTheJsonSummaryWithTheOldKeysAndTheNewOnes() {
        String json = Reports.json(
                List.of(run(Mode.UNFENCED, 3, 2, 0, 0, 25, 4), run(Mode.FENCED, 0, 0, 2, 1, 24, 0)),
                DemoSettings.defaults());

        assertThat(json)
                .startsWith("{\"settings\":{\"zookeeper\":null,\"jdbcUrl\":null,\"jdbcUser\":\"postgres\","
                        + "\"kafka\":null,\"workers\":4,\"skus\":2,\"initialStock\":150,\"durationMs\":40000,"
                        + "\"pauseMs\":3000,\"pauseEveryMs\":1000,\"sessionTimeoutMs\":2000,\"workMs\":80,"
                        + "\"seed\":42,\"modes\":[\"unfenced\",\"fenced\"],\"json\":null,")
                .contains("\"minLandedPauses\":1,\"keep\":false},\"runs\":[")
                .contains("{\"mode\":\"unfenced\",\"ordersAccepted\":10,\"unitsSold\":20,\"oversoldUnits\":3,"
                        + "\"lostUpdates\":2,\"staleWritesRejected\":0,\"staleRecordsDropped\":0,"
                        + "\"opsPerSecond\":12.50,\"invariantsHold\":false,\"pausesInjected\":1,\"pausesLanded\":1,"
                        + "\"staleWritesAccepted\":4,\"staleRecordsApplied\":4,\"leaseCheckRefusals\":0,"
                        + "\"violations\":[\"broken\"],\"startEpochMs\":1000,\"pauses\":["
                        + "{\"worker\":1,\"sku\":\"sku-1\",\"point\":\"READ_WRITE\",\"token\":7,\"takeoverToken\":8,"
                        + "\"startMs\":100,\"endMs\":400}]}")
                .contains("{\"mode\":\"fenced\",\"ordersAccepted\":10,\"unitsSold\":20,\"oversoldUnits\":0,"
                        + "\"lostUpdates\":0,\"staleWritesRejected\":2,\"staleRecordsDropped\":1,"
                        + "\"opsPerSecond\":12.00,\"invariantsHold\":true,\"pausesInjected\":1,")
                .doesNotContain("password");
    }

    @Test
    void printsTheModesSideBySideWithBothColumnsMeasured() {
        String table =
                Reports.table(List.of(run(Mode.UNFENCED, 3, 2, 0, 0, 25, 4), run(Mode.FENCED, 0, 0, 2, 1, 24, 0)));

        assertThat(table)
                .containsPattern("\\s+unfenced\\s+fenced\n")
                .containsPattern("oversold units\\s+3\\s+0\n")
                .containsPattern("lost updates\\s+2\\s+0\n")
                .containsPattern("stale writes accepted\\s+4\\s+0\n")
                .containsPattern("stale writes rejected by PostgreSQL\\s+0\\s+2\n")
                .containsPattern("writes stopped by the lease check\\s+-\\s+-\n")
                .containsPattern("stale records applied by the consumer\\s+4\\s+0\n")
                .containsPattern("stale records dropped by the consumer\\s+0\\s+1\n")
                .containsPattern("pauses landed \\(SKU taken over\\)\\s+1\\s+1\n")
                .containsPattern("ops/s \\(not a benchmark: pauses dominate\\)\\s+12.5\\s+12.0\n")
                .containsPattern("invariants hold\\s+NO\\s+yes\n")
                .doesNotContain("throughput");
    }

    @Test
    void theHtmlReportIsSelfContainedWithATimelineLabelledByToken() {
        String html = Reports.html(List.of(run(Mode.FENCED, 0, 0, 1, 0, 24, 0)), DemoSettings.defaults());

        assertThat(html)
                .contains("<svg", "SIGSTOP sku-1 t7", "stale write of sku-1 under token 7 rejected: row has token 8")
                .contains("<title>sku-1 token 7, 600 ms</title>")
                .doesNotContain("http://cdn", "https://", "<script", "<link");
    }

    @Test
    void theTimelineShowsTheHarmWhereItHappened() {
        String svg = Reports.html(List.of(harmfulRun(Mode.UNFENCED)), DemoSettings.defaults());

        // the stale write of token 8 after token 9 had written sku-1: its own colour and mark
        assertThat(svg)
                .contains("<rect class=\"hold stale-accepted\"", "fill=\"" + HtmlTimeline.STALE_ACCEPTED + "\"")
                .contains("<g class=\"stale-accepted\">", "stale write of sku-1 under token 8 ACCEPTED");
        // token 9's write is not stale
        assertThat(svg).containsOnlyOnce("<rect class=\"hold stale-accepted\"");
        // the lease-lost mark, and token 8's bar ends where token 9 was granted the lock (1300), hatched after
        assertThat(svg).contains("<g class=\"lease-lost\">", "lease lost: sku-1 token 8");
        assertThat(svg).contains("<rect class=\"hold passed-on\"", "sku-1 token 8: the lock had passed on");
        // a landed pause and one nobody took over, drawn differently
        assertThat(svg).contains("<rect class=\"pause-landed\"", "taken over by token 9");
        assertThat(svg)
                .contains("<rect class=\"pause-unlanded\"", "stroke-dasharray", "SIGSTOP sku-2 t3 (not taken over)");
        // the claim refused at the read is labelled as such
        assertThat(svg).contains("<g class=\"claim-refused\">", "claim refused at read");
        assertThat(svg).doesNotContain("class=\"write-rejected\"");
    }

    @Test
    void theTimelineMarksExactlyTheStaleWritesTheCheckerFoundInTheDatabase() {
        // given: the workers' clocks put token 8's WRITTEN after token 9's, but the database committed it first
        // (as the checker read it), so it is not stale and must not be drawn as such
        RunResult harmful = harmfulRun(Mode.UNFENCED);
        InvariantChecker.InvariantReport clean =
                new InvariantChecker.InvariantReport(2, 3, 0, 0, List.of(), 0, List.of());
        RunResult run = new RunResult(
                harmful.mode(),
                clean,
                0,
                0,
                3,
                2.0,
                2,
                harmful.startMillis(),
                harmful.endMillis(),
                harmful.events(),
                harmful.pauses());

        String html = Reports.html(List.of(run), DemoSettings.defaults());

        assertThat(html).doesNotContain("class=\"stale-accepted\"", "class=\"hold stale-accepted\"");
        assertThat(HtmlTimeline.staleWrites(harmful.report())).containsExactly("2/sku-1/8");
    }

    /** {@code run} with every moment moved by {@code shift} and its stop {@code longer} later. */
    private static RunResult shifted(RunResult run, long shift, long longer) {
        List<WorkerEvent> events = run.events().stream()
                .map(e -> new WorkerEvent(e.atMillis() + shift, e.worker(), e.kind(), e.sku(), e.token(), e.a(), e.b()))
                .toList();
        List<RunRecorder.Pause> pauses = run.pauses().stream()
                .map(p -> new RunRecorder.Pause(
                        p.worker(),
                        p.sku(),
                        p.token(),
                        p.point(),
                        p.startMillis() + shift,
                        p.endMillis() + shift,
                        p.nextToken()))
                .toList();
        return new RunResult(
                Mode.FENCED,
                run.report(),
                0,
                0,
                3,
                2.0,
                run.workers(),
                run.startMillis() + shift,
                run.endMillis() + shift + longer,
                events,
                pauses);
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

    @Test
    void theLegendShowsEveryMarkTheTimelineDraws() {
        String html = Reports.html(
                List.of(harmfulRun(Mode.UNFENCED), run(Mode.FENCED, 0, 0, 1, 0, 24, 0)), DemoSettings.defaults());
        String legend = HtmlTimeline.legend();
        String legendShapes = shape(legend);

        // every kind of mark the timelines draw, the rejection cross and the accepted-stale triangle among them
        List<String> marks = all("<g class=\"[a-z-]+\">(<[a-z]+ [^>]*>)", html);
        assertThat(all("<g class=\"([a-z-]+)\">", html))
                .contains("stale-accepted", "write-rejected", "claim-refused", "lease-lost");
        assertThat(marks).allSatisfy(mark -> assertThat(legendShapes).contains(shape(mark)));
        // every pause style and every colour a hold is drawn in
        assertThat(all("(<rect class=\"pause-[a-z]+\" [^>]*>)", html))
                .isNotEmpty()
                .allSatisfy(pause -> assertThat(legendShapes).contains(shape(pause)));
        assertThat(all("<rect class=\"hold [a-z-]+\" [^>]* fill=\"(#[0-9a-f]+)\"", html))
                .isNotEmpty()
                .allSatisfy(colour -> assertThat(legend).contains("fill=\"" + colour + "\""));
        assertThat(legend).contains("url(#passed-legend)").doesNotContain("<g class=");
        assertThat(html).containsOnlyOnce("<p class=\"legend\">");
    }

    @Test
    void bothRunsShareOneTimeAxis() {
        // given: the same events, the second run later and longer
        RunResult first = harmfulRun(Mode.UNFENCED);
        RunResult second = shifted(first, 60_000, 8_000);

        String html = Reports.html(List.of(first, second), DemoSettings.defaults());

        // then: each second of a run stands where the same second of the other does
        List<String> holds = all("<rect class=\"hold [a-z-]+\" x=\"([0-9.]+)\"", html);
        assertThat(holds).hasSize(8);
        assertThat(holds.subList(4, 8)).isEqualTo(holds.subList(0, 4));
        List<String> ticks = all("<text x=\"([0-9.]+)\" y=\"[0-9]+\" fill=\"#888\">5s</text>", html);
        assertThat(ticks).hasSize(2).containsOnly(ticks.get(0));
        assertThat(all("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"([0-9]+)\"", html))
                .hasSize(2)
                .containsOnly("1110");
    }

    @Test
    void aLabelNearTheEndOfTheAxisIsNotCut() {
        // given: a pause that starts as the run stops, nobody taking the SKU over
        RunResult harmful = harmfulRun(Mode.UNFENCED);
        RunRecorder.Pause late =
                new RunRecorder.Pause(1, "sku-2", 3, WorkerEvent.PausePoint.READ_WRITE, 2_990, 3_000, 0);
        RunResult run = new RunResult(
                harmful.mode(),
                harmful.report(),
                0,
                0,
                3,
                2.0,
                2,
                harmful.startMillis(),
                harmful.endMillis(),
                harmful.events(),
                List.of(late));

        String html = Reports.html(List.of(run), DemoSettings.defaults());

        String label = "SIGSTOP sku-2 t3 (not taken over)";
        List<String> at = all("<text x=\"([0-9.]+)\" y=\"[0-9]+\" fill=\"#000\">" + Pattern.quote(label), html);
        assertThat(at).hasSize(1);
        assertThat(Double.parseDouble(at.get(0)) + label.length() * 6.1).isLessThanOrEqualTo(1110);
        // and no label of the timeline, tick labels included, passes the right edge
        Matcher texts = Pattern.compile("<text x=\"([0-9.]+)\" y=\"[0-9]+\"[^>]*>([^<]*)</text>")
                .matcher(html);
        while (texts.find()) {
            assertThat(Double.parseDouble(texts.group(1)) + texts.group(2).length() * 6.1)
                    .as(texts.group(2))
                    .isLessThanOrEqualTo(1110);
        }
    }
}
