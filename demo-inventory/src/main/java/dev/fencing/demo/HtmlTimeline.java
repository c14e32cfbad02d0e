package dev.fencing.demo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.LongFunction;

/**
 * One run as an inline SVG timeline, one lane per worker: its lock holds labelled by token and coloured by
 * outcome, the part of a hold after the lock really passed on (the lease-lost mark from the lock's listener,
 * or a newer token's grant of the same SKU, whichever came first) drawn hatched, accepted stale writes in
 * their own colour, claims refused at the read labelled, and pauses drawn solid when another worker took
 * the SKU over meanwhile (landed) and dashed when nobody did. Every mark has a CSS class named after what it
 * shows ({@code stale-accepted}, {@code lease-lost}, {@code pause-landed}, {@code pause-unlanded}, {@code
 * claim-refused}, {@code write-rejected}, {@code lease-check-refused}), so a test can find it. Stateless and
 * thread-safe.
 */
final class HtmlTimeline {
    static final String ACCEPTED = "#7fb3d5";
    static final String STALE_ACCEPTED = "#e67e22";
    static final String SOLD_OUT = "#d5d8dc";
    static final String REJECTED = "#f5b7b1";
    static final String LEASE_CHECK_REFUSED = "#c39bd3";
    private static final int WIDTH = 1100;
    private static final int LANE_HEIGHT = 34;
    private static final int LANE_LABEL = 90;

    private HtmlTimeline() {}

    /** The legend for {@link #svg}. */
    static String legend() {
        return "<p class=\"legend\">"
                + "<span style=\"background:" + ACCEPTED + "\"></span>lock held, write accepted (label: token)"
                + "<span style=\"background:" + STALE_ACCEPTED + "\"></span>stale write ACCEPTED (older token"
                + " than one already written)"
                + "<span style=\"background:" + SOLD_OUT + "\"></span>lock held, sold out"
                + "<span style=\"background:" + REJECTED + "\"></span>write or claim rejected"
                + "<span style=\"background:" + LEASE_CHECK_REFUSED + "\"></span>write stopped by the lease check"
                + "<span style=\"background:repeating-linear-gradient(45deg,#888 0 2px,#fff 2px 4px)\"></span>"
                + "after the lock passed on (the worker does not know yet)"
                + "<span style=\"background:#000;opacity:.55\"></span>frozen, SKU taken over (landed)"
                + "<span style=\"border:1px dashed #000\"></span>frozen, nobody took over"
                + "<span style=\"background:#8e44ad\"></span>lease lost (listener)</p>\n";
    }

    static void svg(StringBuilder out, RunResult run) {
        double span = Math.max(1, run.endMillis() - run.startMillis());
        LongFunction<Double> x = t -> LANE_LABEL + (t - run.startMillis()) * (WIDTH - LANE_LABEL) / span;
        int height = run.workers() * LANE_HEIGHT + 24;
        out.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">%n"
                        + "<defs><pattern id=\"passed-%s\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\""
                        + " patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"4\" fill=\"#888\"/></pattern>"
                        + "</defs>%n",
                WIDTH + 10,
                height,
                WIDTH + 10,
                height,
                run.mode().label()));
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
        holds(out, x, run);
        pauses(out, x, run);
        marks(out, x, run);
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

    private static void holds(StringBuilder out, LongFunction<Double> x, RunResult run) {
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
                        hold(out, x, locked, event, outcome.getOrDefault(key, "sold-out"), passedAt.get(key), run);
                    }
                }
                default -> {}
            }
        }
    }

    private static void hold(
            StringBuilder out,
            LongFunction<Double> x,
            WorkerEvent locked,
            WorkerEvent released,
            String outcome,
            Long passedAt,
            RunResult run) {
        String fill =
                switch (outcome) {
                    case "accepted" -> ACCEPTED;
                    case "stale-accepted" -> STALE_ACCEPTED;
                    case "rejected" -> REJECTED;
                    case "lease-check-refused" -> LEASE_CHECK_REFUSED;
                    default -> SOLD_OUT;
                };
        double hx = x.apply(locked.atMillis());
        long end = released.atMillis();
        long heldUntil = passedAt == null ? end : Math.max(locked.atMillis(), Math.min(passedAt, end));
        double hw = Math.max(1, x.apply(heldUntil) - hx);
        int y = (locked.worker() - 1) * LANE_HEIGHT + 8;
        out.append(String.format(
                Locale.ROOT,
                "<rect class=\"hold %s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#fff\""
                        + " stroke-width=\".5\"><title>%s token %d, %d ms%s</title></rect>",
                outcome,
                hx,
                y,
                hw,
                LANE_HEIGHT - 16,
                fill,
                Reports.escape(locked.sku()),
                locked.token(),
                released.atMillis() - locked.atMillis(),
                outcome.equals("stale-accepted") ? ": stale write ACCEPTED" : ""));
        if (heldUntil < end) {
            double px = x.apply(heldUntil);
            out.append(String.format(
                    Locale.ROOT,
                    "<rect class=\"hold passed-on\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\""
                            + " fill-opacity=\".35\"/><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\""
                            + " fill=\"url(#passed-%s)\"><title>%s token %d: the lock had passed on; the worker"
                            + " went on as if it held it</title></rect>",
                    px,
                    y,
                    Math.max(1, x.apply(end) - px),
                    LANE_HEIGHT - 16,
                    fill,
                    px,
                    y,
                    Math.max(1, x.apply(end) - px),
                    LANE_HEIGHT - 16,
                    run.mode().label(),
                    Reports.escape(locked.sku()),
                    locked.token()));
        }
        String label = Long.toString(locked.token());
        if (hw > label.length() * 6 + 2) {
            out.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s</text>", hx + 1, y + 12, label));
        }
        out.append('\n');
    }

    private static void pauses(StringBuilder out, LongFunction<Double> x, RunResult run) {
        for (RunRecorder.Pause pause : run.pauses()) {
            double px = x.apply(pause.startMillis());
            double pw = Math.max(2, x.apply(pause.endMillis()) - px);
            int y = (pause.worker() - 1) * LANE_HEIGHT + 2;
            String style = pause.landed()
                    ? "class=\"pause-landed\" fill=\"#000\" opacity=\".55\""
                    : "class=\"pause-unlanded\" fill=\"none\" stroke=\"#000\" stroke-dasharray=\"4 3\"";
            out.append(String.format(
                    Locale.ROOT,
                    "<rect %s x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\">"
                            + "<title>SIGSTOP %.1fs holding %s token %d (%s); %s</title></rect>"
                            + "<text x=\"%.1f\" y=\"%d\" fill=\"%s\">SIGSTOP %s t%d%s</text>%n",
                    style,
                    px,
                    y,
                    pw,
                    LANE_HEIGHT - 6,
                    (pause.endMillis() - pause.startMillis()) / 1000.0,
                    Reports.escape(pause.sku()),
                    pause.token(),
                    PauseInjector.describe(pause.point()),
                    pause.landed()
                            ? "taken over by token " + pause.nextToken()
                            : "nobody took the SKU over: this pause tested nothing",
                    px + 3,
                    y + 12,
                    pause.landed() ? "#fff" : "#000",
                    Reports.escape(pause.sku()),
                    pause.token(),
                    pause.landed() ? "" : " (not taken over)"));
        }
    }

    private static void marks(StringBuilder out, LongFunction<Double> x, RunResult run) {
        Set<String> stale = staleWrites(run.report());
        for (WorkerEvent event : run.events()) {
            double ex = x.apply(event.atMillis());
            int lane = (event.worker() - 1) * LANE_HEIGHT;
            switch (event.kind()) {
                case REJECTED -> {
                    boolean claim = event.b() == 1;
                    out.append(String.format(
                            Locale.ROOT,
                            "<g class=\"%s\"><path d=\"M%.1f %d l6 6 m0 -6 l-6 6\" stroke=\"#c0392b\""
                                    + " stroke-width=\"2.5\"/>%s<title>%s of %s under token %d rejected: row has"
                                    + " token %d</title></g>%n",
                            claim ? "claim-refused" : "write-rejected",
                            ex - 3,
                            lane + LANE_HEIGHT - 14,
                            claim
                                    ? String.format(
                                            Locale.ROOT,
                                            "<text x=\"%.1f\" y=\"%d\" fill=\"#c0392b\">claim refused at read</text>",
                                            ex + 5,
                                            lane + LANE_HEIGHT - 4)
                                    : "",
                            claim ? "claim at the read" : "stale write",
                            Reports.escape(event.sku()),
                            event.token(),
                            event.a()));
                }
                case WRITTEN -> {
                    if (stale.contains(key(event))) {
                        out.append(String.format(
                                Locale.ROOT,
                                "<g class=\"stale-accepted\"><path d=\"M%.1f %d l5 -8 l5 8 z\" fill=\"%s\""
                                        + " stroke=\"#000\"/><title>stale write of %s under token %d ACCEPTED after a"
                                        + " newer token had written it</title></g>%n",
                                ex - 5,
                                lane + LANE_HEIGHT - 6,
                                STALE_ACCEPTED,
                                Reports.escape(event.sku()),
                                event.token()));
                    }
                }
                case LEASE_CHECK_REFUSED ->
                    out.append(String.format(
                            Locale.ROOT,
                            "<g class=\"lease-check-refused\"><circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"%s\""
                                    + " stroke=\"#000\"/><title>lease check before the write of %s under token %d"
                                    + " found the lease lost: nothing written</title></g>%n",
                            ex,
                            lane + LANE_HEIGHT - 10,
                            LEASE_CHECK_REFUSED,
                            Reports.escape(event.sku()),
                            event.token()));
                case LEASE_LOST ->
                    out.append(String.format(
                            Locale.ROOT,
                            "<g class=\"lease-lost\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\""
                                    + " stroke=\"#8e44ad\" stroke-width=\"2\"/><title>lease lost: %s token %d (the"
                                    + " lock's listener; the worker does not act on it)</title></g>%n",
                            ex,
                            lane + 4,
                            ex,
                            lane + LANE_HEIGHT - 4,
                            Reports.escape(event.sku()),
                            event.token()));
                default -> {}
            }
        }
    }

    private static String key(WorkerEvent event) {
        return event.worker() + "/" + event.sku() + "/" + event.token();
    }
}
