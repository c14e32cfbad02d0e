package dev.fencing.verify;

import dev.fencing.harness.Html;
import dev.fencing.harness.TimeAxis;
import dev.fencing.verify.checker.Operation;
import dev.fencing.verify.checker.Outcome;
import dev.fencing.verify.checker.Violation;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The self-contained HTML report: per run, the summary table's numbers, a timeline with a lane per writer (each
 * operation a bar from its invoke to its completion, coloured by outcome, with a strip whose hue follows its token and
 * its token as a label; its publish
 * a thinner bar after it), fault bands across the lanes (pauses, partitions and backend kills on their writer's
 * lane; leader kills, consumer crashes and rebalances across all lanes), operations in a violation outlined in
 * red with a marker, and every violation listed. Every run stands on one {@link TimeAxis}, counted from its own
 * start. No scripts, no external resources. Stateless.
 */
final class HtmlTimeline {
    private static final int LEFT = 90;
    private static final int LANE = 30;
    private static final int TOP = 40;
    private static final long LEAD = 1_000;

    private HtmlTimeline() {}

    static String of(List<RunResult> runs, VerifySettings settings) {
        StringBuilder html = new StringBuilder();
        html.append("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>verify: fencing under faults</title>")
                .append("<style>body{font-family:sans-serif;margin:16px;color:#222}")
                .append("pre{background:#f6f6f6;padding:8px;overflow-x:auto}")
                .append(".scroll{overflow-x:auto;border:1px solid #ccc}")
                .append("li.v{margin:2px 0;font-family:monospace;font-size:12px}")
                .append(".legend span{display:inline-block;margin-right:14px}")
                .append(".sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}")
                .append("</style></head><body>");
        html.append("<h1>verify: the whole chain under faults</h1><p>")
                .append(Html.escape(settings.toString()))
                .append("</p><pre>")
                .append(Html.escape(SummaryTable.of(runs)))
                .append("</pre>");
        html.append("<div class=\"legend\">")
                .append(swatch("#4caf50", "append ok"))
                .append(swatch("#90a4ae", "refused (fail)"))
                .append(swatch("#ffb300", "indeterminate (info)"))
                .append(swatch("#1b5e20", "publish acknowledged"))
                .append(swatch("rgba(123,31,162,0.25)", "pause (SIGSTOP)"))
                .append(swatch("rgba(230,81,0,0.3)", "partition from ZooKeeper"))
                .append(swatch("rgba(198,40,40,0.5)", "backend kill"))
                .append(swatch("rgba(33,150,243,0.15)", "leader kill / consumer crash / rebalance"))
                .append(swatch("#d50000", "in a violation"))
                .append("</div>");
        TimeAxis axis = axis(runs);
        for (RunResult run : runs) {
            run(html, run, settings.clients(), axis);
        }
        return html.append("</body></html>\n").toString();
    }

    /**
     * One axis for every run: from 1 s before a run's workload starts to the last operation, publish or fault of
     * the longest run, each run counted from its own start, so that the runs compare by eye.
     */
    static TimeAxis axis(List<RunResult> runs) {
        long span = 1_000;
        for (RunResult run : runs) {
            long end = run.endMillis();
            for (Operation op : run.history().operations()) {
                end = Math.max(
                        end,
                        Math.max(
                                op.completeTime(),
                                op.publish() == null ? 0 : op.publish().completeTime()));
            }
            for (Fault fault : run.faults()) {
                end = Math.max(end, fault.end());
            }
            span = Math.max(span, end + 500 - run.startMillis());
        }
        double seconds = (LEAD + span) / 1000.0;
        int width = (int) Math.min(30_000, Math.max(1_200, seconds * 60));
        return TimeAxis.of(LEAD, span, LEFT, width - 10);
    }

    private static void run(StringBuilder html, RunResult run, int writers, TimeAxis axis) {
        long start = run.startMillis();
        int width = axis.width() + 10;
        int height = TOP + (writers + 1) * LANE + 20;

        Map<Long, Integer> violating = new HashMap<>();
        for (int i = 0; i < run.check().violations().size(); i++) {
            for (long id : run.check().violations().get(i).ops()) {
                violating.putIfAbsent(id, i);
            }
        }

        html.append("<h2>")
                .append(run.mode().label())
                .append(" run: ")
                .append(run.check().violations().size())
                .append(" violations</h2><p>histories, fault log and logs in ")
                .append(Html.escape(run.directory().toString()))
                .append("</p><div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"")
                .append(width)
                .append("\" height=\"")
                .append(height)
                .append("\" font-size=\"10\">");
        // time axis: every 5 s from the start of the workload
        html.append(axis.ticks(TOP - 12, height - 10, TOP - 14));
        html.append(String.format(Locale.ROOT, "<text x=\"4\" y=\"%d\">servers</text>", TOP + 18));
        for (int w = 1; w <= writers; w++) {
            int y = TOP + w * LANE;
            html.append(String.format(
                    Locale.ROOT,
                    "<text x=\"4\" y=\"%d\">writer %d</text><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>",
                    y + 18,
                    w,
                    LEFT,
                    y + LANE - 1,
                    width,
                    y + LANE - 1));
        }
        for (Fault fault : run.faults()) {
            double x = axis.x(fault.start() - start);
            double w = Math.max(2, axis.length(fault.end() - fault.start()));
            String title = Html.escape(fault.kind().flagName() + " " + fault.target() + ": " + fault.detail()
                    + (fault.counted() ? "" : " (not counted)"));
            String dash = fault.counted() ? "" : " stroke-dasharray=\"3,2\" stroke=\"#555\"";
            if (fault.writer() > 0) {
                String fill =
                        switch (fault.kind()) {
                            case PAUSE -> "rgba(123,31,162,0.25)";
                            case PARTITION -> "rgba(230,81,0,0.3)";
                            default -> "rgba(198,40,40,0.5)";
                        };
                html.append(String.format(
                        Locale.ROOT,
                        "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"%s><title>%s</title></rect>",
                        x,
                        TOP + fault.writer() * LANE,
                        w,
                        LANE - 2,
                        fill,
                        dash,
                        title));
            } else {
                html.append(String.format(
                        Locale.ROOT,
                        "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"rgba(33,150,243,0.15)\"%s>"
                                + "<title>%s</title></rect><text x=\"%.1f\" y=\"%d\" fill=\"#0d47a1\">%s</text>",
                        x,
                        TOP,
                        w,
                        (writers + 1) * LANE,
                        dash,
                        title,
                        x + 2,
                        TOP + 12,
                        Html.escape(fault.kind().jsonName())));
            }
        }
        for (Operation op : run.history().operations()) {
            operation(html, op, start, axis, run.endMillis(), violating.get(op.id()));
        }
        html.append("</svg></div>");
        List<Violation> violations = run.check().violations();
        if (!violations.isEmpty()) {
            html.append("<h3>").append(violations.size()).append(" violations</h3><ol>");
            for (int i = 0; i < violations.size(); i++) {
                html.append("<li class=\"v\" id=\"")
                        .append(run.mode().label())
                        .append("-v")
                        .append(i + 1)
                        .append("\">")
                        .append(Html.escape(violations.get(i).kind().name() + ": "
                                + violations.get(i).detail()))
                        .append("</li>");
            }
            html.append("</ol>");
        }
        if (!run.notes().isEmpty()) {
            html.append("<h3>notes</h3><ul>");
            run.notes()
                    .forEach(note ->
                            html.append("<li>").append(Html.escape(note)).append("</li>"));
            html.append("</ul>");
        }
    }

    private static void operation(
            StringBuilder html, Operation op, long start, TimeAxis axis, long runEnd, Integer violation) {
        int y = TOP + op.client() * LANE + 4;
        long completed = op.completeTime() > 0 ? op.completeTime() : Math.max(runEnd, op.invokeTime());
        double x = axis.x(op.invokeTime() - start);
        double w = Math.max(1.5, axis.length(completed - op.invokeTime()));
        String fill = op.outcome() == Outcome.OK ? "#4caf50" : op.outcome() == Outcome.FAIL ? "#90a4ae" : "#ffb300";
        String stroke = violation != null ? " stroke=\"#d50000\" stroke-width=\"2\"" : "";
        StringBuilder title = new StringBuilder(op.describe())
                .append(" via ")
                .append(op.path())
                .append(": ")
                .append(op.outcome().name().toLowerCase(Locale.ROOT));
        if (op.error() != null) {
            title.append(" (").append(op.error()).append(')');
        }
        if (op.publish() != null) {
            title.append("; publish ")
                    .append(op.publish().outcome().name().toLowerCase(Locale.ROOT))
                    .append(op.publish().stamped() ? "" : " (no token header)");
            if (op.publish().offset() != null) {
                title.append(" at partition ")
                        .append(op.publish().partition())
                        .append(" offset ")
                        .append(op.publish().offset());
            }
        }
        if (violation != null) {
            title.append("; violation ").append(violation + 1);
        }
        html.append(String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"%s\"%s><title>%s</title></rect>",
                x,
                y,
                w,
                fill,
                stroke,
                Html.escape(title.toString())));
        // a strip whose hue follows the token: one grant's colour, from lane to lane and run to run
        html.append(String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"3\" fill=\"hsl(%d,70%%,45%%)\"/>",
                x,
                y - 3,
                w,
                (int) ((op.token() * 47) % 360)));
        if (w > 22) {
            html.append(String.format(
                    Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" fill=\"#fff\">%d</text>", x + 2, y + 11, op.token()));
        }
        if (op.publish() != null) {
            long publishEnd = op.publish().completeTime() > 0
                    ? op.publish().completeTime()
                    : op.publish().invokeTime();
            double px = axis.x(op.publish().invokeTime() - start);
            double pw = Math.max(1.5, axis.length(publishEnd - op.publish().invokeTime()));
            html.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"5\" fill=\"%s\"/>",
                    px,
                    y + 16,
                    pw,
                    op.publish().acknowledged() ? (op.publish().stamped() ? "#1b5e20" : "#000") : "#ffb300"));
        }
        if (violation != null) {
            html.append(String.format(
                    Locale.ROOT,
                    "<path d=\"M%.1f %d l4 -7 l-8 0 z\" fill=\"#d50000\"><title>violation %d</title></path>",
                    x + w / 2,
                    y - 1,
                    violation + 1));
        }
    }

    private static String swatch(String color, String label) {
        return "<span><span class=\"sw\" style=\"background:" + color + "\"></span>" + Html.escape(label) + "</span>";
    }
}
