package dev.fencing.verify;

import dev.fencing.harness.Html;
import dev.fencing.harness.RunReport;
import dev.fencing.harness.SvgTimeline;
import dev.fencing.harness.SvgTimeline.Mark;
import dev.fencing.harness.TimeAxis;
import dev.fencing.verify.checker.Operation;
import dev.fencing.verify.checker.Outcome;
import dev.fencing.verify.checker.Violation;
import dev.fencing.verify.checker.ViolationKind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * verify's part of the harness's {@link RunReport}: the summary table's rows ({@link SummaryTable#table}) and, per run, a timeline on the harness's {@link
 * SvgTimeline} with a lane per writer (each operation a bar from its invoke to its completion, coloured by outcome,
 * with a strip whose hue follows its token and its token as a label; its publish a thinner bar after it), fault bands
 * (pauses, partitions and backend kills on their writer's lane; leader kills, consumer crashes and rebalances across
 * all lanes; a fault that did not take effect outlined dashed), operations in a violation outlined in red with a
 * marker, and every violation listed. The legend is {@link #MARKS}, each drawn as the timeline draws it, and the
 * timeline draws no other mark. Every run stands on one {@link TimeAxis}, counted from its own start. No scripts, no
 * external resources. Stateless.
 */
final class HtmlTimeline {
    private static final int LEFT = 90;
    private static final int LANE = 30;
    private static final long LEAD = 1_000;
    private static final String VIOLATION_RED = "#d50000";

    private static final Mark OK = operation("ok", "#4caf50", "append ok");
    private static final Mark FAIL = operation("fail", "#90a4ae", "refused (fail)");
    private static final Mark INFO = operation("info", "#ffb300", "indeterminate (info)");
    private static final Mark TOKEN = new Mark(
            "token",
            "its token's hue: one grant's colour from lane to lane and run to run (label: token)",
            new SvgTimeline.Bar(1, 3, hue(1)));
    private static final Mark PUBLISHED = publish("published", "#1b5e20", "publish acknowledged");
    private static final Mark PUBLISHED_UNSTAMPED =
            publish("published-unstamped", "#000", "publish acknowledged without a token header");
    private static final Mark PUBLISH_UNKNOWN = publish("publish-unknown", "#ffb300", "publish not acknowledged");
    private static final Mark IN_VIOLATION = new Mark(
            "op in-violation",
            "in a violation",
            new SvgTimeline.Bar(4, 14, "fill=\"none\" stroke=\"" + VIOLATION_RED + "\" stroke-width=\"2\""));
    private static final Mark VIOLATION = new Mark(
            "violation", "violation (numbered as listed)", new SvgTimeline.Triangle(-1, false, VIOLATION_RED, "none"));
    private static final Mark PAUSE = writerFault("pause", "rgba(123,31,162,0.25)", "pause (SIGSTOP)");
    private static final Mark PARTITION =
            writerFault("partition", "rgba(230,81,0,0.3)", "partition from the lock service");
    private static final Mark BACKEND_KILL = writerFault("backend-kill", "rgba(198,40,40,0.5)", "backend kill");
    private static final Mark SERVER_FAULT = new Mark(
            "fault server",
            "leader kill / consumer crash / rebalance (across the lanes)",
            new SvgTimeline.Bar(0, 0, "fill=\"rgba(33,150,243,0.15)\""));
    private static final Mark NOT_COUNTED = new Mark(
            "fault not-counted",
            "fault that did not take effect (not counted)",
            new SvgTimeline.Bar(0, LANE - 2, "fill=\"none\" stroke=\"#555\" stroke-dasharray=\"3,2\""));

    /** Every mark the timeline draws, in the legend's order. */
    static final List<Mark> MARKS = List.of(
            OK,
            FAIL,
            INFO,
            TOKEN,
            PUBLISHED,
            PUBLISHED_UNSTAMPED,
            PUBLISH_UNKNOWN,
            IN_VIOLATION,
            VIOLATION,
            PAUSE,
            PARTITION,
            BACKEND_KILL,
            SERVER_FAULT,
            NOT_COUNTED);

    private HtmlTimeline() {}

    static String of(List<RunResult> runs, VerifySettings settings) {
        RunReport<RunResult> report = RunReport.<RunResult>builder()
                .title("verify: fencing under faults")
                .heading("verify: the whole chain under faults")
                .css("body{font-family:sans-serif;margin:16px;color:#222}"
                        + ".scroll{overflow-x:auto;border:1px solid #ccc}"
                        + "li.v{margin:2px 0;font-family:monospace;font-size:12px}")
                .table(SummaryTable.table(runs))
                .explanation(violationKinds(runs))
                .legend(SvgTimeline.legend(MARKS))
                .axis(HtmlTimeline::axis)
                .runHeading(run ->
                        run.mode().label() + " run: " + run.check().violations().size() + " violations")
                .section((html, run, axis) -> run(html, run, settings.clients(), axis))
                .build();
        return report.html(runs, settings.toString());
    }

    /** What each violation kind in the table means, for the kinds some run found; empty when none did. */
    static String violationKinds(List<RunResult> runs) {
        StringBuilder html = new StringBuilder();
        for (ViolationKind kind : ViolationKind.values()) {
            if (runs.stream().anyMatch(run -> run.check().violationsByKind().get(kind) > 0)) {
                html.append("<li class=\"v\">")
                        .append(Html.escape(kind.name()))
                        .append(": ")
                        .append(Html.escape(kind.description()))
                        .append("</li>\n");
            }
        }
        return html.isEmpty() ? "" : "<ul>\n" + html + "</ul>\n";
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
        Map<Long, Integer> violating = new HashMap<>();
        for (int i = 0; i < run.check().violations().size(); i++) {
            for (long id : run.check().violations().get(i).ops()) {
                violating.putIfAbsent(id, i);
            }
        }

        html.append("<p>histories, fault log and logs in ")
                .append(Html.escape(run.directory().toString()))
                .append("</p><div class=\"scroll\">");
        List<String> lanes = new ArrayList<>();
        lanes.add("servers");
        for (int w = 1; w <= writers; w++) {
            lanes.add("writer " + w);
        }
        SvgTimeline timeline = new SvgTimeline(
                axis, run.startMillis(), lanes, LANE, MARKS, run.mode().label());
        for (Fault fault : run.faults()) {
            fault(timeline, fault);
        }
        for (Operation op : run.history().operations()) {
            operation(timeline, op, run.endMillis(), violating.get(op.id()));
        }
        html.append(timeline.svg()).append("</div>");
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

    private static void fault(SvgTimeline timeline, Fault fault) {
        String title = fault.kind().flagName() + " " + fault.target() + ": " + fault.detail()
                + (fault.counted() ? "" : " (not counted)");
        int lane = fault.writer();
        if (fault.writer() > 0) {
            Mark mark =
                    switch (fault.kind()) {
                        case PAUSE -> PAUSE;
                        case PARTITION -> PARTITION;
                        default -> BACKEND_KILL;
                    };
            timeline.span(mark, lane, fault.start(), Math.max(fault.end(), fault.start() + 1), title);
        } else {
            timeline.span(SERVER_FAULT, 0, fault.start(), Math.max(fault.end(), fault.start() + 1), title);
            timeline.label(0, fault.start(), 12, fault.kind().jsonName(), "#0d47a1");
        }
        if (!fault.counted()) {
            timeline.span(NOT_COUNTED, lane, fault.start(), Math.max(fault.end(), fault.start() + 1), title);
        }
    }

    private static void operation(SvgTimeline timeline, Operation op, long runEnd, Integer violation) {
        int lane = op.client();
        long completed = op.completeTime() > 0 ? op.completeTime() : Math.max(runEnd, op.invokeTime());
        Mark mark = op.outcome() == Outcome.OK ? OK : op.outcome() == Outcome.FAIL ? FAIL : INFO;
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
        double width = timeline.span(mark, lane, op.invokeTime(), completed, title.toString());
        // a strip whose hue follows the token: one grant's colour, from lane to lane and run to run
        timeline.span(TOKEN, lane, op.invokeTime(), completed, null, hue(op.token()));
        if (width > 22) {
            timeline.label(lane, op.invokeTime(), 15, Long.toString(op.token()), "#fff");
        }
        if (op.publish() != null) {
            long publishEnd = op.publish().completeTime() > 0
                    ? op.publish().completeTime()
                    : op.publish().invokeTime();
            Mark publish = op.publish().acknowledged()
                    ? (op.publish().stamped() ? PUBLISHED : PUBLISHED_UNSTAMPED)
                    : PUBLISH_UNKNOWN;
            timeline.span(publish, lane, op.publish().invokeTime(), publishEnd, null);
        }
        if (violation != null) {
            timeline.span(IN_VIOLATION, lane, op.invokeTime(), completed, "violation " + (violation + 1));
            timeline.point(
                    VIOLATION,
                    lane,
                    op.invokeTime() + (completed - op.invokeTime()) / 2,
                    "violation " + (violation + 1));
        }
    }

    private static String hue(long token) {
        return "fill=\"hsl(" + (token * 47) % 360 + ",70%,45%)\"";
    }

    private static Mark operation(String outcome, String fill, String meaning) {
        return new Mark("op " + outcome, meaning, new SvgTimeline.Bar(4, 14, "fill=\"" + fill + "\""));
    }

    private static Mark publish(String css, String fill, String meaning) {
        return new Mark(css, meaning, new SvgTimeline.Bar(20, 5, "fill=\"" + fill + "\""));
    }

    private static Mark writerFault(String css, String fill, String meaning) {
        return new Mark("fault " + css, meaning, new SvgTimeline.Bar(0, LANE - 2, "fill=\"" + fill + "\""));
    }
}
