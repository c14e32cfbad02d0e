package dev.fencing.demo;

import dev.fencing.harness.Html;
import dev.fencing.harness.Json;
import dev.fencing.harness.RunTable;
import dev.fencing.harness.TimeAxis;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Renders runs as the side-by-side terminal table, the JSON summary and the self-contained HTML page (inline
 * CSS and SVG, nothing fetched from anywhere; the timeline itself is {@link HtmlTimeline}). Stateless and
 * thread-safe.
 */
final class Reports {
    static final String OPS_LABEL = "ops/s (not a benchmark: pauses dominate)";

    private Reports() {}

    /** The rows of the side-by-side table: label and how to print a run's value. */
    private static List<Map.Entry<String, Function<RunResult, String>>> rows() {
        List<Map.Entry<String, Function<RunResult, String>>> rows = new ArrayList<>();
        rows.add(Map.entry("orders accepted", r -> Integer.toString(r.report().ordersAccepted())));
        rows.add(Map.entry("units sold", r -> Integer.toString(r.report().unitsSold())));
        rows.add(Map.entry("oversold units", r -> Integer.toString(r.report().oversoldUnits())));
        rows.add(Map.entry("lost updates", r -> Integer.toString(r.report().lostUpdates())));
        rows.add(
                Map.entry("stale writes accepted", r -> Long.toString(r.report().staleWritesAccepted())));
        rows.add(Map.entry("stale writes rejected by PostgreSQL", r -> Long.toString(r.staleWritesRejected())));
        rows.add(Map.entry(
                "writes stopped by the lease check",
                r -> r.mode() == Mode.LEASE_CHECK ? Long.toString(r.leaseCheckRefusals()) : "-"));
        rows.add(Map.entry(
                "stale records applied by the consumer",
                r -> Long.toString(r.report().staleRecordsApplied())));
        rows.add(Map.entry("stale records dropped by the consumer", r -> Long.toString(r.staleRecordsDropped())));
        rows.add(Map.entry("pauses injected (SIGSTOP)", r -> Integer.toString(r.pausesInjected())));
        rows.add(Map.entry("pauses landed (SKU taken over)", r -> Long.toString(r.pausesLanded())));
        rows.add(Map.entry("invariants hold", r -> r.report().invariantsHold() ? "yes" : "NO"));
        rows.add(Map.entry(OPS_LABEL, r -> String.format(Locale.ROOT, "%.1f", r.opsPerSecond())));
        return rows;
    }

    /** The side-by-side table, one column per run. */
    static String table(List<RunResult> runs) {
        StringBuilder out = new StringBuilder();
        int labelWidth =
                rows().stream().mapToInt(row -> row.getKey().length()).max().orElse(10) + 2;
        RunTable.row(out, "", labelWidth, runs, run -> run.mode().label(), 13);
        for (Map.Entry<String, Function<RunResult, String>> row : rows()) {
            RunTable.row(out, row.getKey(), labelWidth, runs, row.getValue(), 13);
        }
        return out.toString();
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
        StringBuilder out = new StringBuilder();
        String style = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1250px}"
                + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 12px}"
                + "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
                + ".bad{color:#b00020;font-weight:bold}.ok{color:#1b7f3b;font-weight:bold}"
                + "svg text{font-size:10px;font-family:monospace}.legend .key{display:inline-block;margin:0 14px 4px 0}"
                + ".legend svg{vertical-align:middle;margin-right:4px}";
        out.append("<h1>Inventory under stop-the-world pauses: without and with fencing</h1>\n");
        out.append("<p>")
                .append(Html.escape(settings.toString()))
                .append(". Workers are separate JVMs frozen with"
                        + " <code>kill -STOP</code> while holding a SKU's lock, for longer than the ZooKeeper session"
                        + " timeout.</p>\n");
        out.append("<table><tr><th></th>");
        for (RunResult run : runs) {
            out.append("<th>").append(run.mode().label()).append("</th>");
        }
        out.append("</tr>\n");
        for (Map.Entry<String, Function<RunResult, String>> row : rows()) {
            out.append("<tr><td>").append(Html.escape(row.getKey())).append("</td>");
            for (RunResult run : runs) {
                String value = row.getValue().apply(run);
                String css = value.equals("NO") ? " bad" : value.equals("yes") ? " ok" : "";
                out.append("<td class=\"n")
                        .append(css)
                        .append("\">")
                        .append(Html.escape(value))
                        .append("</td>");
            }
            out.append("</tr>\n");
        }
        out.append("</table>\n");
        out.append("<p>Oversold units: per SKU, units sold beyond the initial stock. Lost updates: accepted"
                + " orders whose read-modify-write replaced a stock value other than the one read under the"
                + " lock, erasing other holders' decrements. Stale writes accepted: orders written under a token"
                + " lower than one already written to their SKU. A pause landed when another worker took the SKU"
                + " over while the paused one was frozen. Ops/s include the pauses, so they compare nothing.</p>\n");
        out.append("<p>The timelines share one time axis, each run counted from its own start.</p>\n");
        out.append(HtmlTimeline.legend());
        TimeAxis axis = HtmlTimeline.axis(runs);
        for (RunResult run : runs) {
            out.append("<h2>").append(run.mode().label()).append(" run</h2>\n");
            if (run.report().violations().isEmpty()) {
                out.append("<p class=\"ok\">All invariants hold.</p>\n");
            } else {
                out.append("<ul>");
                for (String violation : run.report().violations()) {
                    out.append("<li class=\"bad\">")
                            .append(Html.escape(violation))
                            .append("</li>");
                }
                out.append("</ul>\n");
            }
            HtmlTimeline.svg(out, run, axis);
        }
        return Html.page("fencing demo: inventory under SIGSTOP", style, out);
    }
}
