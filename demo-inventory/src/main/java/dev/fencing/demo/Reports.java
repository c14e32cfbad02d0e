package dev.fencing.demo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Renders runs as the side-by-side terminal table, the JSON summary and the self-contained HTML report
 * (inline CSS and SVG, nothing fetched from anywhere). Stateless and thread-safe.
 */
final class Reports {
    private static final int TIMELINE_WIDTH = 1100;
    private static final int LANE_HEIGHT = 34;
    private static final int LANE_LABEL = 90;

    private Reports() {}

    /** The rows of the side-by-side table: label and how to print a run's value. */
    private static List<Map.Entry<String, Function<RunResult, String>>> rows() {
        List<Map.Entry<String, Function<RunResult, String>>> rows = new ArrayList<>();
        rows.add(Map.entry("orders accepted", r -> Integer.toString(r.report().ordersAccepted())));
        rows.add(Map.entry("units sold", r -> Integer.toString(r.report().unitsSold())));
        rows.add(Map.entry("oversold units", r -> Integer.toString(r.report().oversoldUnits())));
        rows.add(Map.entry("lost updates", r -> Integer.toString(r.report().lostUpdates())));
        rows.add(Map.entry("stale writes rejected by PostgreSQL", r -> Long.toString(r.staleWritesRejected())));
        rows.add(Map.entry("stale records dropped by the consumer", r -> Long.toString(r.staleRecordsDropped())));
        rows.add(Map.entry("ops/s", r -> String.format(Locale.ROOT, "%.1f", r.opsPerSecond())));
        rows.add(Map.entry(
                "pauses injected (SIGSTOP)", r -> Integer.toString(r.pauses().size())));
        rows.add(Map.entry("invariants hold", r -> r.report().invariantsHold() ? "yes" : "NO"));
        return rows;
    }

    /** The side-by-side table, plus the throughput ratio when both modes ran. */
    static String table(List<RunResult> runs) {
        StringBuilder out = new StringBuilder();
        int labelWidth =
                rows().stream().mapToInt(row -> row.getKey().length()).max().orElse(10) + 2;
        out.append(pad("", labelWidth));
        for (RunResult run : runs) {
            out.append(String.format(Locale.ROOT, "%12s", run.mode().label()));
        }
        out.append('\n');
        for (Map.Entry<String, Function<RunResult, String>> row : rows()) {
            out.append(pad(row.getKey(), labelWidth));
            for (RunResult run : runs) {
                out.append(String.format(Locale.ROOT, "%12s", row.getValue().apply(run)));
            }
            out.append('\n');
        }
        throughputRatio(runs)
                .ifPresent(ratio -> out.append(
                        String.format(Locale.ROOT, "fenced/unfenced throughput: %.2f (ops/s, same seed)%n", ratio)));
        return out.toString();
    }

    /** Fenced ops/s divided by unfenced ops/s, when both ran. */
    static Optional<Double> throughputRatio(List<RunResult> runs) {
        Optional<RunResult> fenced =
                runs.stream().filter(r -> r.mode() == Mode.FENCED).findFirst();
        Optional<RunResult> unfenced =
                runs.stream().filter(r -> r.mode() == Mode.UNFENCED).findFirst();
        if (fenced.isEmpty() || unfenced.isEmpty() || unfenced.get().opsPerSecond() == 0) {
            return Optional.empty();
        }
        return Optional.of(fenced.get().opsPerSecond() / unfenced.get().opsPerSecond());
    }

    /**
     * {@code {"runs":[{"mode":"unfenced","ordersAccepted":N,"unitsSold":N,"oversoldUnits":N,"lostUpdates":N,
     * "staleWritesRejected":N,"staleRecordsDropped":N,"opsPerSecond":X,"invariantsHold":true}, ...]}}
     */
    static String json(List<RunResult> runs) {
        StringBuilder out = new StringBuilder("{\"runs\":[");
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
                            + "\"invariantsHold\":%b}",
                    run.mode().label(),
                    report.ordersAccepted(),
                    report.unitsSold(),
                    report.oversoldUnits(),
                    report.lostUpdates(),
                    run.staleWritesRejected(),
                    run.staleRecordsDropped(),
                    run.opsPerSecond(),
                    report.invariantsHold()));
        }
        return out.append("]}\n").toString();
    }

    /** The HTML report: the table, then per run the violations and a per-worker timeline. */
    static String html(List<RunResult> runs, DemoSettings settings) {
        StringBuilder out = new StringBuilder();
        out.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                + "<title>fencing demo: inventory under SIGSTOP</title><style>\n"
                + "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1250px}"
                + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 12px}"
                + "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
                + ".bad{color:#b00020;font-weight:bold}.ok{color:#1b7f3b;font-weight:bold}"
                + "svg text{font-size:10px;font-family:monospace}.legend span{display:inline-block;"
                + "width:14px;height:10px;margin:0 4px 0 14px;vertical-align:middle}"
                + "\n</style></head><body>\n");
        out.append("<h1>Inventory under stop-the-world pauses: without and with fencing</h1>\n");
        out.append("<p>")
                .append(escape(settings.toString()))
                .append(". Workers are separate JVMs frozen with"
                        + " <code>kill -STOP</code> while holding a SKU's lock, for longer than the ZooKeeper session"
                        + " timeout.</p>\n");
        out.append("<table><tr><th></th>");
        for (RunResult run : runs) {
            out.append("<th>").append(run.mode().label()).append("</th>");
        }
        out.append("</tr>\n");
        for (Map.Entry<String, Function<RunResult, String>> row : rows()) {
            out.append("<tr><td>").append(escape(row.getKey())).append("</td>");
            for (RunResult run : runs) {
                String value = row.getValue().apply(run);
                String css = value.equals("NO") ? " bad" : value.equals("yes") ? " ok" : "";
                out.append("<td class=\"n")
                        .append(css)
                        .append("\">")
                        .append(escape(value))
                        .append("</td>");
            }
            out.append("</tr>\n");
        }
        out.append("</table>\n");
        throughputRatio(runs)
                .ifPresent(ratio -> out.append(
                        String.format(Locale.ROOT, "<p>fenced/unfenced throughput: <b>%.2f</b></p>%n", ratio)));
        out.append("<p>Oversold units: per SKU, units sold beyond the initial stock. Lost updates: accepted"
                + " orders whose read-modify-write replaced a stock value other than the one read under the"
                + " lock, erasing other holders' decrements.</p>\n");
        for (RunResult run : runs) {
            out.append("<h2>").append(run.mode().label()).append(" run</h2>\n");
            if (run.report().violations().isEmpty()) {
                out.append("<p class=\"ok\">All invariants hold.</p>\n");
            } else {
                out.append("<ul>");
                for (String violation : run.report().violations()) {
                    out.append("<li class=\"bad\">").append(escape(violation)).append("</li>");
                }
                out.append("</ul>\n");
            }
            out.append("<p class=\"legend\">"
                    + "<span style=\"background:#7fb3d5\"></span>lock held, write accepted (label: token)"
                    + "<span style=\"background:#d5d8dc\"></span>lock held, sold out"
                    + "<span style=\"background:#f5b7b1\"></span>lock held, write rejected"
                    + "<span style=\"background:#000;opacity:.55\"></span>frozen (SIGSTOP)"
                    + "<span style=\"background:#c0392b\"></span>stale write rejected by PostgreSQL</p>\n");
            timeline(out, run);
        }
        out.append("</body></html>\n");
        return out.toString();
    }

    private static void timeline(StringBuilder out, RunResult run) {
        double span = Math.max(1, run.endMillis() - run.startMillis());
        Function<Long, Double> x = t -> LANE_LABEL + (t - run.startMillis()) * (TIMELINE_WIDTH - LANE_LABEL) / span;
        int height = run.workers() * LANE_HEIGHT + 24;
        out.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">%n",
                TIMELINE_WIDTH + 10,
                height,
                TIMELINE_WIDTH + 10,
                height));
        for (int s = 0; s <= span / 1000; s += 5) {
            double gx = x.apply(run.startMillis() + s * 1000L);
            out.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                            + "<text x=\"%.1f\" y=\"%d\">%ds</text>%n",
                    gx,
                    gx,
                    height - 14,
                    gx,
                    height - 2,
                    s));
        }
        for (int w = 1; w <= run.workers(); w++) {
            out.append(String.format(
                    Locale.ROOT, "<text x=\"4\" y=\"%d\">worker %d</text>%n", (w - 1) * LANE_HEIGHT + 20, w));
        }
        Map<String, WorkerEvent> open = new HashMap<>();
        Map<String, String> outcome = new HashMap<>();
        for (WorkerEvent event : run.events()) {
            String key = event.worker() + "/" + event.sku() + "/" + event.token();
            switch (event.kind()) {
                case LOCKED -> open.put(key, event);
                case WRITTEN -> outcome.put(key, "#7fb3d5");
                case SOLD_OUT -> outcome.put(key, "#d5d8dc");
                case REJECTED -> outcome.put(key, "#f5b7b1");
                case RELEASED -> {
                    WorkerEvent locked = open.remove(key);
                    if (locked != null) {
                        hold(out, x, locked, event, outcome.getOrDefault(key, "#d5d8dc"));
                    }
                }
                default -> {}
            }
        }
        for (RunRecorder.Pause pause : run.pauses()) {
            double px = x.apply(pause.startMillis());
            double pw = Math.max(2, x.apply(pause.endMillis()) - px);
            int y = (pause.worker() - 1) * LANE_HEIGHT + 2;
            out.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#000\" opacity=\".55\">"
                            + "<title>SIGSTOP %.1fs holding %s token %d (%s)%s</title></rect>"
                            + "<text x=\"%.1f\" y=\"%d\" fill=\"#fff\">SIGSTOP %s t%d</text>%n",
                    px,
                    y,
                    pw,
                    LANE_HEIGHT - 6,
                    (pause.endMillis() - pause.startMillis()) / 1000.0,
                    escape(pause.sku()),
                    pause.token(),
                    pause.point() == WorkerEvent.PausePoint.READ_WRITE
                            ? "between read and write"
                            : "between write and publish",
                    pause.nextToken() > 0 ? "; taken over by token " + pause.nextToken() : "",
                    px + 3,
                    y + 12,
                    escape(pause.sku()),
                    pause.token()));
        }
        for (WorkerEvent event : run.events()) {
            if (event.kind() == WorkerEvent.Kind.REJECTED) {
                double rx = x.apply(event.atMillis());
                int y = (event.worker() - 1) * LANE_HEIGHT + LANE_HEIGHT - 8;
                out.append(String.format(
                        Locale.ROOT,
                        "<path d=\"M%.1f %d l6 6 m0 -6 l-6 6\" stroke=\"#c0392b\" stroke-width=\"2.5\">"
                                + "<title>stale write of %s under token %d rejected: row has token %d</title></path>%n",
                        rx - 3,
                        y - 6,
                        escape(event.sku()),
                        event.token(),
                        event.a()));
            }
        }
        out.append("</svg>\n");
    }

    private static void hold(
            StringBuilder out, Function<Long, Double> x, WorkerEvent locked, WorkerEvent released, String fill) {
        double hx = x.apply(locked.atMillis());
        double hw = Math.max(1, x.apply(released.atMillis()) - hx);
        int y = (locked.worker() - 1) * LANE_HEIGHT + 8;
        out.append(String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#fff\" stroke-width=\".5\">"
                        + "<title>%s token %d, %d ms</title></rect>",
                hx,
                y,
                hw,
                LANE_HEIGHT - 16,
                fill,
                escape(locked.sku()),
                locked.token(),
                released.atMillis() - locked.atMillis()));
        String label = Long.toString(locked.token());
        if (hw > label.length() * 6 + 2) {
            out.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s</text>", hx + 1, y + 12, label));
        }
        out.append('\n');
    }

    private static String pad(String text, int width) {
        return text.length() >= width ? text : text + " ".repeat(width - text.length());
    }

    static String escape(String text) {
        return text.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("\"", "&quot;");
    }
}
