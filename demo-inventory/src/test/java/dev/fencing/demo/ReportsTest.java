package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ReportsTest {

    private static RunResult run(Mode mode, int oversold, int lost, long rejected, long dropped, long operations) {
        InvariantChecker.InvariantReport report = new InvariantChecker.InvariantReport(
                10, 20, oversold, lost, oversold + lost > 0 ? List.of("broken") : List.of());
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

    @Test
    void writesTheJsonSummaryInTheDocumentedShape() {
        String json = Reports.json(List.of(run(Mode.UNFENCED, 3, 2, 0, 0, 25), run(Mode.FENCED, 0, 0, 2, 1, 24)));

        assertThat(json.trim())
                .isEqualTo("{\"runs\":["
                        + "{\"mode\":\"unfenced\",\"ordersAccepted\":10,\"unitsSold\":20,\"oversoldUnits\":3,"
                        + "\"lostUpdates\":2,\"staleWritesRejected\":0,\"staleRecordsDropped\":0,"
                        + "\"opsPerSecond\":12.50,\"invariantsHold\":false},"
                        + "{\"mode\":\"fenced\",\"ordersAccepted\":10,\"unitsSold\":20,\"oversoldUnits\":0,"
                        + "\"lostUpdates\":0,\"staleWritesRejected\":2,\"staleRecordsDropped\":1,"
                        + "\"opsPerSecond\":12.00,\"invariantsHold\":true}]}");
    }

    @Test
    void printsBothModesSideBySideWithTheThroughputRatio() {
        String table = Reports.table(List.of(run(Mode.UNFENCED, 3, 2, 0, 0, 25), run(Mode.FENCED, 0, 0, 2, 1, 24)));

        assertThat(table)
                .containsPattern("\\s+unfenced\\s+fenced\n")
                .containsPattern("oversold units\\s+3\\s+0\n")
                .containsPattern("lost updates\\s+2\\s+0\n")
                .containsPattern("stale writes rejected by PostgreSQL\\s+0\\s+2\n")
                .containsPattern("stale records dropped by the consumer\\s+0\\s+1\n")
                .containsPattern("ops/s\\s+12.5\\s+12.0\n")
                .containsPattern("invariants hold\\s+NO\\s+yes\n")
                .contains("fenced/unfenced throughput: 0.96");
    }

    @Test
    void theHtmlReportIsSelfContainedWithATimelineLabelledByToken() {
        String html = Reports.html(List.of(run(Mode.FENCED, 0, 0, 1, 0, 24)), DemoSettings.defaults());

        assertThat(html)
                .contains("<svg", "SIGSTOP sku-1 t7", "stale write of sku-1 under token 7 rejected: row has token 8")
                .contains("<title>sku-1 token 7, 600 ms</title>")
                .doesNotContain("http://cdn", "https://", "<script", "<link");
    }
}
