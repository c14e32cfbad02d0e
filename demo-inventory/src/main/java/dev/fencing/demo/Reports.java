package dev.fencing.demo;

import dev.fencing.harness.Html;
import dev.fencing.harness.Json;
import dev.fencing.harness.RunReport;
import dev.fencing.harness.RunTable;
import dev.fencing.harness.TimeAxis;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The demo's reports: its rows of the harness's side-by-side {@link RunTable} (console and HTML), its words and
 * per-run section in the harness's {@link RunReport} page (the timeline itself is {@link HtmlTimeline}), and the JSON
 * summary. Stateless and thread-safe.
 */
final class Reports {
    static final String OPS_LABEL = "ops/s (not a benchmark: pauses dominate)";

    private Reports() {}

    /** The side-by-side table: a column per run, a row per measure. */
    static final RunTable<RunResult> TABLE = RunTable.fitted(
            run -> run.mode().label(),
            List.of(
                    RunTable.row(
                            "orders accepted", r -> Integer.toString(r.report().ordersAccepted())),
                    RunTable.row("units sold", r -> Integer.toString(r.report().unitsSold())),
                    RunTable.row(
                            "oversold units", r -> Integer.toString(r.report().oversoldUnits())),
                    RunTable.row(
                            "lost updates", r -> Integer.toString(r.report().lostUpdates())),
                    RunTable.row(
                            "stale writes accepted",
                            r -> Long.toString(r.report().staleWritesAccepted())),
                    RunTable.row("stale writes rejected by PostgreSQL", r -> Long.toString(r.staleWritesRejected())),
                    RunTable.row(
                            "writes stopped by the lease check",
                            r -> r.mode() == Mode.LEASE_CHECK ? Long.toString(r.leaseCheckRefusals()) : "-"),
                    RunTable.row(
                            "stale records applied by the consumer",
                            r -> Long.toString(r.report().staleRecordsApplied())),
                    RunTable.row("stale records dropped by the consumer", r -> Long.toString(r.staleRecordsDropped())),
                    RunTable.row("pauses injected (SIGSTOP)", r -> Integer.toString(r.pausesInjected())),
                    RunTable.row("pauses landed (SKU taken over)", r -> Long.toString(r.pausesLanded())),
                    RunTable.check("invariants hold", r -> r.report().invariantsHold()),
                    RunTable.row(OPS_LABEL, r -> String.format(Locale.ROOT, "%.1f", r.opsPerSecond()))),
            13);

    /** The HTML report: the table, then per run the violations and a per-worker timeline. */
    private static final RunReport<RunResult> REPORT = RunReport.<RunResult>builder()
            .title("fencing demo: inventory under SIGSTOP")
            .heading("Inventory under stop-the-world pauses: without and with fencing")
            .css("body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1250px}")
            .settingsNote(". Workers are separate JVMs frozen with <code>kill -STOP</code> while holding a SKU's lock,"
                    + " for longer than the ZooKeeper session timeout.")
            .table(TABLE)
            .explanation("<p>Oversold units: per SKU, units sold beyond the initial stock. Lost updates: accepted"
                    + " orders whose read-modify-write replaced a stock value other than the one read under the"
                    + " lock, erasing other holders' decrements. Stale writes accepted: orders written under a token"
                    + " lower than one already written to their SKU. A pause landed when another worker took the SKU"
                    + " over while the paused one was frozen. Ops/s include the pauses, so they compare nothing.</p>\n"
                    + "<p>The timelines share one time axis, each run counted from its own start.</p>\n")
            .legend(HtmlTimeline.legend())
            .axis(HtmlTimeline::axis)
            .runHeading(run -> run.mode().label() + " run")
            .section(Reports::section)
            .build();

    /** The side-by-side table, one column per run. */
    static String table(List<RunResult> runs) {
        return TABLE.text(runs);
    }

    /**
     * The JSON summary: {@code {"settings":{...},"runs":[{...,"pauses":[...]}, ...]}}; the keys are
     * documented in demo-inventory/README.md.
     */
    static String json(List<RunResult> runs, DemoSettings settings) {
        StringBuilder out = new StringBuilder("{\"settings\":").append(settingsJson(settings));
        out.append(",\"runs\":[");
        for (int i = 0; i < runs.size(); i++) {
            RunResult run = runs.get(i);
            InvariantChecker.InvariantReport report = run.report();
            if (i > 0) {
                out.append(',');
            }
            out.append(String.format(
                    Locale.ROOT,
                    "{\"mode\":\"%s\",\"ordersAccepted\":%d,\"unitsSold\":%d,\"oversoldUnits\":%d,\"lostUpdates\":%d,"
                            + "\"staleWritesRejected\":%d,\"staleRecordsDropped\":%d,\"opsPerSecond\":%.2f,"
                            + "\"invariantsHold\":%b,\"pausesInjected\":%d,\"pausesLanded\":%d,"
                            + "\"staleWritesAccepted\":%d,\"staleRecordsApplied\":%d,\"leaseCheckRefusals\":%d,"
                            + "\"violations\":[%s],\"startEpochMs\":%d,\"pauses\":[",
                    run.mode().label(),
                    report.ordersAccepted(),
                    report.unitsSold(),
                    report.oversoldUnits(),
                    report.lostUpdates(),
                    run.staleWritesRejected(),
                    run.staleRecordsDropped(),
                    run.opsPerSecond(),
                    report.invariantsHold(),
                    run.pausesInjected(),
                    run.pausesLanded(),
                    report.staleWritesAccepted(),
                    report.staleRecordsApplied(),
                    run.leaseCheckRefusals(),
                    report.violations().stream().map(Json::quote).collect(Collectors.joining(",")),
                    run.startMillis()));
            for (int p = 0; p < run.pauses().size(); p++) {
                RunRecorder.Pause pause = run.pauses().get(p);
                if (p > 0) {
                    out.append(',');
                }
                out.append(String.format(
                        Locale.ROOT,
                        "{\"worker\":%d,\"sku\":%s,\"point\":\"%s\",\"token\":%d,\"takeoverToken\":%s,"
                                + "\"startMs\":%d,\"endMs\":%d}",
                        pause.worker(),
                        Json.quote(pause.sku()),
                        pause.point().name(),
                        pause.token(),
                        pause.landed() ? Long.toString(pause.nextToken()) : "null",
                        pause.startMillis() - run.startMillis(),
                        pause.endMillis() - run.startMillis()));
            }
            out.append("]}");
        }
        return out.append("]}\n").toString();
    }

    /** Every flag's value (never the password); {@code null} where a server is embedded. */
    static String settingsJson(DemoSettings s) {
        return String.format(
                Locale.ROOT,
                "{\"zookeeper\":%s,\"jdbcUrl\":%s,\"jdbcUser\":%s,\"kafka\":%s,\"workers\":%d,\"skus\":%d,"
                        + "\"initialStock\":%d,\"durationMs\":%d,\"pauseMs\":%d,\"pauseEveryMs\":%d,"
                        + "\"sessionTimeoutMs\":%d,\"workMs\":%d,\"seed\":%d,\"modes\":[%s],\"json\":%s,\"html\":%s,"
                        + "\"minLandedPauses\":%d,\"keep\":%b}",
                Json.quote(s.zookeeperConnect()),
                Json.quote(s.jdbcUrl()),
                Json.quote(s.jdbcUser()),
                Json.quote(s.kafkaBootstrap()),
                s.workers(),
                s.skus(),
                s.initialStock(),
                s.duration().toMillis(),
                s.pause().toMillis(),
                s.pauseEvery().toMillis(),
                s.sessionTimeout().toMillis(),
                s.work().toMillis(),
                s.seed(),
                s.modes().stream().map(m -> Json.quote(m.label())).collect(Collectors.joining(",")),
                Json.quote(s.jsonFile()),
                Json.quote(s.htmlFile()),
                s.minLandedPauses(),
                s.keep());
    }

    /** The HTML report: the table, then per run the violations and a per-worker timeline. */
    static String html(List<RunResult> runs, DemoSettings settings) {
        return REPORT.html(runs, settings.toString());
    }

    private static void section(StringBuilder out, RunResult run, TimeAxis axis) {
        if (run.report().violations().isEmpty()) {
            out.append("<p class=\"ok\">All invariants hold.</p>\n");
        } else {
            out.append("<ul>");
            for (String violation : run.report().violations()) {
                out.append("<li class=\"bad\">").append(Html.escape(violation)).append("</li>");
            }
            out.append("</ul>\n");
        }
        HtmlTimeline.svg(out, run, axis);
    }
}
