package dev.fencing.demo;

import dev.fencing.harness.Html;
import dev.fencing.harness.TimeAxis;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One run as an inline SVG timeline, one lane per worker: its lock holds labelled by token and coloured by
 * outcome, the part of a hold after the lock really passed on (the lease-lost mark from the lock's listener,
 * or a newer token's grant of the same SKU, whichever came first) drawn hatched, accepted stale writes in
 * their own colour, claims refused at the read labelled, and pauses drawn solid when another worker took
 * the SKU over meanwhile (landed) and dashed when nobody did. Every mark has a CSS class named after what it
 * shows ({@code stale-accepted}, {@code lease-lost}, {@code pause-landed}, {@code pause-unlanded}, {@code
 * claim-refused}, {@code write-rejected}, {@code lease-check-refused}), so a test can find it.
 *
 * <p>The runs of one report share one {@link TimeAxis} ({@link #axis}): a second after the start of the unfenced
 * run stands where the same second of the fenced run does. The {@link #legend} draws each mark with the same code
 * the timeline draws it with, so it shows every mark there is. Labels that would pass the right edge move left.
 * Stateless and thread-safe.
 */
final class HtmlTimeline {
    static final String ACCEPTED = "#7fb3d5";
    static final String STALE_ACCEPTED = "#e67e22";
    static final String SOLD_OUT = "#d5d8dc";
    static final String REJECTED = "#f5b7b1";
    static final String LEASE_CHECK_REFUSED = "#c39bd3";
    private static final int WIDTH = 1100;
    private static final int SVG_WIDTH = WIDTH + 10;
    private static final int LANE_HEIGHT = 34;
    private static final int LANE_LABEL = 90;
    private static final int HOLD_HEIGHT = LANE_HEIGHT - 16;

    private HtmlTimeline() {}

    /**
     * One axis for every run of a report: from the earliest event before a run's start to the latest event, pause
     * or stop after it, over all runs, each counted from its own start.
     */
    static TimeAxis axis(List<RunResult> runs) {
        long lead = 0;
        long span = 1;
        for (RunResult run : runs) {
            long last = run.endMillis();
            for (WorkerEvent event : run.events()) {
                lead = Math.max(lead, run.startMillis() - event.atMillis());
                last = Math.max(last, event.atMillis());
            }
            for (RunRecorder.Pause pause : run.pauses()) {
                last = Math.max(last, pause.endMillis());
            }
            span = Math.max(span, last - run.startMillis());
        }
        return TimeAxis.of(lead, span, LANE_LABEL, WIDTH);
    }

    /** The legend for {@link #svg}: every mark it draws, drawn as it draws it, with what it means. */
    static String legend() {
        StringBuilder out = new StringBuilder("<p class=\"legend\">");
        key(out, bar(ACCEPTED), "lock held, write accepted (label: token)");
        key(out, bar(STALE_ACCEPTED), "stale write ACCEPTED (older token than one already written)");
        key(out, bar(SOLD_OUT), "lock held, sold out");
        key(out, bar(REJECTED), "write or claim rejected");
        key(out, bar(LEASE_CHECK_REFUSED), "write stopped by the lease check");
        key(
                out,
                "<defs>" + hatch("legend") + "</defs><rect x=\"1\" y=\"2\" width=\"16\" height=\"10\""
                        + " fill=\"url(#passed-legend)\"/>",
                "after the lock passed on (the worker does not know yet)");
        key(out, pauseShape(true, null, 1, 1, 16, 12, ""), "frozen (SIGSTOP), SKU taken over (landed)");
        key(out, pauseShape(false, null, 1, 1, 16, 12, ""), "frozen (SIGSTOP), nobody took over");
        key(out, rejectionMark(6, 4), "stale write rejected by PostgreSQL, or claim refused at the read (labelled)");
        key(out, staleAcceptedMark(4, 12), "stale write ACCEPTED after a newer token had written");
        key(out, leaseCheckMark(9, 7), "lease check found the lease lost: nothing written");
        key(out, leaseLostMark(9, 1, 13), "lease lost (listener)");
        return out.append("</p>\n").toString();
    }

    static void svg(StringBuilder out, RunResult run, TimeAxis axis) {
        int height = run.workers() * LANE_HEIGHT + 24;
        out.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">%n"
                        + "<defs>%s</defs>%n",
                SVG_WIDTH,
                height,
                SVG_WIDTH,
                height,
                hatch(run.mode().label())));
        out.append(axis.ticks(0, height - 14, height - 2));
        for (int w = 1; w <= run.workers(); w++) {
            out.append(String.format(
                    Locale.ROOT, "<text x=\"4\" y=\"%d\">worker %d</text>%n", (w - 1) * LANE_HEIGHT + 20, w));
        }
        Timeline timeline = new Timeline(out, axis, run);
        timeline.holds();
        timeline.pauses();
        timeline.marks();
        out.append("</svg>\n");
    }

    /**
     * The holds whose write the checker found stale in the database (an order under a token lower than one
     * already written to its SKU, in commit order), as {@code worker/sku/token} keys of their events: the
     * timeline marks exactly the writes the table counts.
     */
    static Set<String> staleWrites(InvariantChecker.InvariantReport report) {
        Set<String> stale = new HashSet<>();
        for (InventorySnapshot.Order order : report.staleWrites()) {
            stale.add(order.worker() + "/" + order.sku() + "/" + order.token());
        }
        return stale;
    }

    /** One run's marks on the shared axis. */
    private record Timeline(StringBuilder out, TimeAxis axis, RunResult run) {
        double x(long atMillis) {
            return axis.x(atMillis - run.startMillis());
        }

        void holds() {
            Set<String> stale = staleWrites(run.report());
            Map<String, WorkerEvent> open = new HashMap<>();
            Map<String, String> outcome = new HashMap<>();
            Map<String, Long> passedAt = new HashMap<>();
            List<WorkerEvent> locks = new ArrayList<>();
            for (WorkerEvent event : run.events()) {
                String key = key(event);
                switch (event.kind()) {
                    case LOCKED -> {
                        open.put(key, event);
                        locks.add(event);
                        // a newer grant of the same SKU: every older holder still open has lost the lock by now
                        open.values().stream()
                                .filter(o -> o.sku().equals(event.sku()) && o.token() < event.token())
                                .forEach(o -> passedAt.merge(key(o), event.atMillis(), Math::min));
                    }
                    case LEASE_LOST -> passedAt.merge(key, event.atMillis(), Math::min);
                    case WRITTEN -> outcome.put(key, stale.contains(key) ? "stale-accepted" : "accepted");
                    case SOLD_OUT -> outcome.put(key, "sold-out");
                    case REJECTED -> outcome.put(key, "rejected");
                    case LEASE_CHECK_REFUSED -> outcome.put(key, "lease-check-refused");
                    case RELEASED -> {
                        WorkerEvent locked = open.remove(key);
                        if (locked != null) {
                            hold(locked, event, outcome.getOrDefault(key, "sold-out"), passedAt.get(key));
                        }
                    }
                    default -> {}
                }
            }
        }

        private void hold(WorkerEvent locked, WorkerEvent released, String outcome, Long passedAt) {
            String fill =
                    switch (outcome) {
                        case "accepted" -> ACCEPTED;
                        case "stale-accepted" -> STALE_ACCEPTED;
                        case "rejected" -> REJECTED;
                        case "lease-check-refused" -> LEASE_CHECK_REFUSED;
                        default -> SOLD_OUT;
                    };
            double hx = x(locked.atMillis());
            long end = released.atMillis();
            long heldUntil = passedAt == null ? end : Math.max(locked.atMillis(), Math.min(passedAt, end));
            double hw = Math.max(1, x(heldUntil) - hx);
            int y = (locked.worker() - 1) * LANE_HEIGHT + 8;
            out.append(String.format(
                    Locale.ROOT,
                    "<rect class=\"hold %s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\""
                            + " stroke=\"#fff\" stroke-width=\".5\"><title>%s token %d, %d ms%s</title></rect>",
                    outcome,
                    hx,
                    y,
                    hw,
                    HOLD_HEIGHT,
                    fill,
                    Html.escape(locked.sku()),
                    locked.token(),
                    released.atMillis() - locked.atMillis(),
                    outcome.equals("stale-accepted") ? ": stale write ACCEPTED" : ""));
            if (heldUntil < end) {
                double px = x(heldUntil);
                double pw = Math.max(1, x(end) - px);
                out.append(String.format(
                        Locale.ROOT,
                        "<rect class=\"hold passed-on\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\""
                                + " fill-opacity=\".35\"/><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\""
                                + " fill=\"url(#passed-%s)\"><title>%s token %d: the lock had passed on; the worker"
                                + " went on as if it held it</title></rect>",
                        px,
                        y,
                        pw,
                        HOLD_HEIGHT,
                        fill,
                        px,
                        y,
                        pw,
                        HOLD_HEIGHT,
                        run.mode().label(),
                        Html.escape(locked.sku()),
                        locked.token()));
            }
            String label = Long.toString(locked.token());
            if (hw > label.length() * 6 + 2) {
                out.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s</text>", hx + 1, y + 12, label));
            }
            out.append('\n');
        }

        void pauses() {
            for (RunRecorder.Pause pause : run.pauses()) {
                double px = x(pause.startMillis());
                double pw = Math.max(2, x(pause.endMillis()) - px);
                int y = (pause.worker() - 1) * LANE_HEIGHT + 2;
                String label =
                        "SIGSTOP " + pause.sku() + " t" + pause.token() + (pause.landed() ? "" : " (not taken over)");
                String title = String.format(
                        Locale.ROOT,
                        "<title>SIGSTOP %.1fs holding %s token %d (%s); %s</title>",
                        (pause.endMillis() - pause.startMillis()) / 1000.0,
                        Html.escape(pause.sku()),
                        pause.token(),
                        PauseSchedule.describe(pause.point()),
                        pause.landed()
                                ? "taken over by token " + pause.nextToken()
                                : "nobody took the SKU over: this pause tested nothing");
                out.append(pauseShape(
                                pause.landed(),
                                pause.landed() ? "pause-landed" : "pause-unlanded",
                                px,
                                y,
                                pw,
                                LANE_HEIGHT - 6,
                                title))
                        .append(String.format(
                                Locale.ROOT,
                                "<text x=\"%.1f\" y=\"%d\" fill=\"%s\">%s</text>%n",
                                Html.labelX(px + 3, label.length(), SVG_WIDTH),
                                y + 12,
                                pause.landed() ? "#fff" : "#000",
                                Html.escape(label)));
            }
        }

        void marks() {
            Set<String> stale = staleWrites(run.report());
            for (WorkerEvent event : run.events()) {
                double ex = x(event.atMillis());
                int lane = (event.worker() - 1) * LANE_HEIGHT;
                switch (event.kind()) {
                    case REJECTED -> {
                        boolean claim = event.b() == 1;
                        String label = "claim refused at read";
                        out.append(String.format(
                                Locale.ROOT,
                                "<g class=\"%s\">%s%s<title>%s of %s under token %d rejected: row has token %d</title>"
                                        + "</g>%n",
                                claim ? "claim-refused" : "write-rejected",
                                rejectionMark(ex - 3, lane + LANE_HEIGHT - 14),
                                claim
                                        ? String.format(
                                                Locale.ROOT,
                                                "<text x=\"%.1f\" y=\"%d\" fill=\"#c0392b\">%s</text>",
                                                Html.labelX(ex + 5, label.length(), SVG_WIDTH),
                                                lane + LANE_HEIGHT - 4,
                                                label)
                                        : "",
                                claim ? "claim at the read" : "stale write",
                                Html.escape(event.sku()),
                                event.token(),
                                event.a()));
                    }
                    case WRITTEN -> {
                        if (stale.contains(key(event))) {
                            out.append(String.format(
                                    Locale.ROOT,
                                    "<g class=\"stale-accepted\">%s<title>stale write of %s under token %d ACCEPTED"
                                            + " after a newer token had written it</title></g>%n",
                                    staleAcceptedMark(ex - 5, lane + LANE_HEIGHT - 6),
                                    Html.escape(event.sku()),
                                    event.token()));
                        }
                    }
                    case LEASE_CHECK_REFUSED ->
                        out.append(String.format(
                                Locale.ROOT,
                                "<g class=\"lease-check-refused\">%s<title>lease check before the write of %s under"
                                        + " token %d found the lease lost: nothing written</title></g>%n",
                                leaseCheckMark(ex, lane + LANE_HEIGHT - 10),
                                Html.escape(event.sku()),
                                event.token()));
                    case LEASE_LOST ->
                        out.append(String.format(
                                Locale.ROOT,
                                "<g class=\"lease-lost\">%s<title>lease lost: %s token %d (the lock's listener; the"
                                        + " worker does not act on it)</title></g>%n",
                                leaseLostMark(ex, lane + 4, lane + LANE_HEIGHT - 4),
                                Html.escape(event.sku()),
                                event.token()));
                    default -> {}
                }
            }
        }
    }

    // The marks, each drawn by one method for the timeline and its legend alike.

    private static String hatch(String id) {
        return "<pattern id=\"passed-" + id + "\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\""
                + " patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"4\" fill=\"#888\"/></pattern>";
    }

    private static String bar(String fill) {
        return "<rect x=\"1\" y=\"2\" width=\"16\" height=\"10\" fill=\"" + fill + "\"/>";
    }

    /** A pause: solid when it landed, dashed when not; {@code css} null for none, {@code inner} the rect's content. */
    private static String pauseShape(
            boolean landed, String css, double x, int y, double width, int height, String inner) {
        return String.format(
                Locale.ROOT,
                "<rect %s%s x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\">%s</rect>",
                css == null ? "" : "class=\"" + css + "\" ",
                landed ? "fill=\"#000\" opacity=\".55\"" : "fill=\"none\" stroke=\"#000\" stroke-dasharray=\"4 3\"",
                x,
                y,
                width,
                height,
                inner);
    }

    private static String rejectionMark(double x, int y) {
        return String.format(
                Locale.ROOT, "<path d=\"M%.1f %d l6 6 m0 -6 l-6 6\" stroke=\"#c0392b\" stroke-width=\"2.5\"/>", x, y);
    }

    private static String staleAcceptedMark(double x, int y) {
        return String.format(
                Locale.ROOT, "<path d=\"M%.1f %d l5 -8 l5 8 z\" fill=\"%s\" stroke=\"#000\"/>", x, y, STALE_ACCEPTED);
    }

    private static String leaseCheckMark(double x, int y) {
        return String.format(
                Locale.ROOT,
                "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"%s\" stroke=\"#000\"/>",
                x,
                y,
                LEASE_CHECK_REFUSED);
    }

    private static String leaseLostMark(double x, int y1, int y2) {
        return String.format(
                Locale.ROOT,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#8e44ad\" stroke-width=\"2\"/>",
                x,
                y1,
                x,
                y2);
    }

    private static void key(StringBuilder out, String mark, String meaning) {
        out.append("<span class=\"key\"><svg width=\"18\" height=\"14\" viewBox=\"0 0 18 14\">")
                .append(mark)
                .append("</svg>")
                .append(Html.escape(meaning))
                .append("</span>");
    }

    private static String key(WorkerEvent event) {
        return event.worker() + "/" + event.sku() + "/" + event.token();
    }
}
