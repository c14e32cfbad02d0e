package dev.fencing.demo;

import dev.fencing.harness.SvgTimeline;
import dev.fencing.harness.SvgTimeline.Mark;
import dev.fencing.harness.TimeAxis;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One run's rows and marks on the harness's {@link SvgTimeline}, one lane per worker: its lock holds labelled by
 * token and coloured by outcome, the part of a hold after the lock really passed on (the lease-lost mark from the
 * lock's listener, or a newer token's grant of the same SKU, whichever came first) drawn hatched, accepted stale
 * writes in their own colour, claims refused at the read labelled, and pauses drawn solid when another worker took
 * the SKU over meanwhile (landed) and dashed when nobody did. Every mark has a CSS class named after what it shows
 * ({@code stale-accepted}, {@code lease-lost}, {@code pause-landed}, {@code pause-unlanded}, {@code claim-refused},
 * {@code write-rejected}, {@code lease-check-refused}), so a test can find it.
 *
 * <p>The runs of one report share one {@link TimeAxis} ({@link #axis}): a second after the start of the unfenced
 * run stands where the same second of the fenced run does. The {@link #legend} is {@link #MARKS}, each drawn by the
 * code that draws it on the timeline, which draws no mark outside that list. Labels that would pass the right edge
 * move left. Stateless and thread-safe.
 */
final class HtmlTimeline {
    static final String ACCEPTED = "#7fb3d5";
    static final String STALE_ACCEPTED = "#e67e22";
    static final String SOLD_OUT = "#d5d8dc";
    static final String REJECTED = "#f5b7b1";
    static final String LEASE_CHECK_REFUSED = "#c39bd3";
    private static final String RED = "#c0392b";
    private static final int WIDTH = 1100;
    private static final int LANE_HEIGHT = 34;
    private static final int LANE_LABEL = 90;
    private static final int HOLD_HEIGHT = LANE_HEIGHT - 16;

    private static final Mark HOLD_ACCEPTED = hold("accepted", ACCEPTED, "lock held, write accepted (label: token)");
    private static final Mark HOLD_STALE_ACCEPTED =
            hold("stale-accepted", STALE_ACCEPTED, "stale write ACCEPTED (older token than one already written)");
    private static final Mark HOLD_SOLD_OUT = hold("sold-out", SOLD_OUT, "lock held, sold out");
    private static final Mark HOLD_REJECTED = hold("rejected", REJECTED, "write or claim rejected");
    private static final Mark HOLD_LEASE_CHECK_REFUSED =
            hold("lease-check-refused", LEASE_CHECK_REFUSED, "write stopped by the lease check");
    private static final Mark PASSED_ON = new Mark(
            "hold passed-on",
            "after the lock passed on (the worker does not know yet)",
            new SvgTimeline.Hatched(8, HOLD_HEIGHT, "#888"));
    private static final Mark PAUSE_LANDED = new Mark(
            "pause-landed",
            "frozen (SIGSTOP), SKU taken over (landed)",
            new SvgTimeline.Bar(2, LANE_HEIGHT - 6, "fill=\"#000\" opacity=\".55\""));
    private static final Mark PAUSE_UNLANDED = new Mark(
            "pause-unlanded",
            "frozen (SIGSTOP), nobody took over",
            new SvgTimeline.Bar(2, LANE_HEIGHT - 6, "fill=\"none\" stroke=\"#000\" stroke-dasharray=\"4 3\""));
    private static final Mark WRITE_REJECTED = new Mark(
            "write-rejected", "stale write rejected by PostgreSQL", new SvgTimeline.Cross(LANE_HEIGHT - 11, RED));
    private static final Mark CLAIM_REFUSED = new Mark(
            "claim-refused", "claim refused at the read (labelled)", new SvgTimeline.Cross(LANE_HEIGHT - 11, RED));
    private static final Mark STALE_ACCEPTED_MARK = new Mark(
            "stale-accepted",
            "stale write ACCEPTED after a newer token had written",
            new SvgTimeline.Triangle(LANE_HEIGHT - 10, true, STALE_ACCEPTED, "#000"));
    private static final Mark LEASE_CHECK_MARK = new Mark(
            "lease-check-refused",
            "lease check found the lease lost: nothing written",
            new SvgTimeline.Dot(LANE_HEIGHT - 10, LEASE_CHECK_REFUSED));
    private static final Mark LEASE_LOST = new Mark(
            "lease-lost", "lease lost (listener)", new SvgTimeline.Rule(LANE_HEIGHT / 2, LANE_HEIGHT - 8, "#8e44ad"));

    /** Every mark the timeline draws, in the legend's order. */
    static final List<Mark> MARKS = List.of(
            HOLD_ACCEPTED,
            HOLD_STALE_ACCEPTED,
            HOLD_SOLD_OUT,
            HOLD_REJECTED,
            HOLD_LEASE_CHECK_REFUSED,
            PASSED_ON,
            PAUSE_LANDED,
            PAUSE_UNLANDED,
            WRITE_REJECTED,
            CLAIM_REFUSED,
            STALE_ACCEPTED_MARK,
            LEASE_CHECK_MARK,
            LEASE_LOST);

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
        return SvgTimeline.legend(MARKS);
    }

    static void svg(StringBuilder out, RunResult run, TimeAxis axis) {
        List<String> lanes = new ArrayList<>();
        for (int w = 1; w <= run.workers(); w++) {
            lanes.add("worker " + w);
        }
        SvgTimeline timeline = new SvgTimeline(
                axis, run.startMillis(), lanes, LANE_HEIGHT, MARKS, run.mode().label());
        Set<String> stale = staleWrites(run.report());
        holds(timeline, run, stale);
        pauses(timeline, run);
        marks(timeline, run, stale);
        out.append(timeline.svg());
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

    private static void holds(SvgTimeline timeline, RunResult run, Set<String> stale) {
        Map<String, WorkerEvent> open = new HashMap<>();
        Map<String, Mark> outcome = new HashMap<>();
        Map<String, Long> passedAt = new HashMap<>();
        for (WorkerEvent event : run.events()) {
            String key = key(event);
            switch (event.kind()) {
                case LOCKED -> {
                    open.put(key, event);
                    // a newer grant of the same SKU: every older holder still open has lost the lock by now
                    open.values().stream()
                            .filter(o -> o.sku().equals(event.sku()) && o.token() < event.token())
                            .forEach(o -> passedAt.merge(key(o), event.atMillis(), Math::min));
                }
                case LEASE_LOST -> passedAt.merge(key, event.atMillis(), Math::min);
                case WRITTEN -> outcome.put(key, stale.contains(key) ? HOLD_STALE_ACCEPTED : HOLD_ACCEPTED);
                case SOLD_OUT -> outcome.put(key, HOLD_SOLD_OUT);
                case REJECTED -> outcome.put(key, HOLD_REJECTED);
                case LEASE_CHECK_REFUSED -> outcome.put(key, HOLD_LEASE_CHECK_REFUSED);
                case RELEASED -> {
                    WorkerEvent locked = open.remove(key);
                    if (locked != null) {
                        hold(timeline, locked, event, outcome.getOrDefault(key, HOLD_SOLD_OUT), passedAt.get(key));
                    }
                }
                default -> {}
            }
        }
    }

    private static void hold(
            SvgTimeline timeline, WorkerEvent locked, WorkerEvent released, Mark outcome, Long passedAt) {
        int lane = locked.worker() - 1;
        long end = released.atMillis();
        long heldUntil = passedAt == null ? end : Math.max(locked.atMillis(), Math.min(passedAt, end));
        double width = timeline.span(
                outcome,
                lane,
                locked.atMillis(),
                heldUntil,
                String.format(
                        Locale.ROOT,
                        "%s token %d, %d ms%s",
                        locked.sku(),
                        locked.token(),
                        released.atMillis() - locked.atMillis(),
                        outcome == HOLD_STALE_ACCEPTED ? ": stale write ACCEPTED" : ""));
        if (heldUntil < end) {
            timeline.span(
                    PASSED_ON,
                    lane,
                    heldUntil,
                    end,
                    locked.sku() + " token " + locked.token()
                            + ": the lock had passed on; the worker went on as if it held it");
        }
        String label = Long.toString(locked.token());
        if (width > label.length() * 6 + 4) {
            timeline.label(lane, locked.atMillis(), 20, label, null);
        }
    }

    private static void pauses(SvgTimeline timeline, RunResult run) {
        for (RunRecorder.Pause pause : run.pauses()) {
            int lane = pause.worker() - 1;
            timeline.span(
                    pause.landed() ? PAUSE_LANDED : PAUSE_UNLANDED,
                    lane,
                    pause.startMillis(),
                    pause.endMillis(),
                    String.format(
                            Locale.ROOT,
                            "SIGSTOP %.1fs holding %s token %d (%s); %s",
                            (pause.endMillis() - pause.startMillis()) / 1000.0,
                            pause.sku(),
                            pause.token(),
                            PauseSchedule.describe(pause.point()),
                            pause.landed()
                                    ? "taken over by token " + pause.nextToken()
                                    : "nobody took the SKU over: this pause tested nothing"));
            timeline.label(
                    lane,
                    pause.startMillis(),
                    14,
                    "SIGSTOP " + pause.sku() + " t" + pause.token() + (pause.landed() ? "" : " (not taken over)"),
                    pause.landed() ? "#fff" : "#000");
        }
    }

    private static void marks(SvgTimeline timeline, RunResult run, Set<String> stale) {
        for (WorkerEvent event : run.events()) {
            int lane = event.worker() - 1;
            switch (event.kind()) {
                case REJECTED -> {
                    boolean claim = event.b() == 1;
                    String title = String.format(
                            Locale.ROOT,
                            "%s of %s under token %d rejected: row has token %d",
                            claim ? "claim at the read" : "stale write",
                            event.sku(),
                            event.token(),
                            event.a());
                    if (claim) {
                        timeline.point(CLAIM_REFUSED, lane, event.atMillis(), title, "claim refused at read", RED);
                    } else {
                        timeline.point(WRITE_REJECTED, lane, event.atMillis(), title);
                    }
                }
                case WRITTEN -> {
                    if (stale.contains(key(event))) {
                        timeline.point(
                                STALE_ACCEPTED_MARK,
                                lane,
                                event.atMillis(),
                                "stale write of " + event.sku() + " under token " + event.token()
                                        + " ACCEPTED after a newer token had written it");
                    }
                }
                case LEASE_CHECK_REFUSED ->
                    timeline.point(
                            LEASE_CHECK_MARK,
                            lane,
                            event.atMillis(),
                            "lease check before the write of " + event.sku() + " under token " + event.token()
                                    + " found the lease lost: nothing written");
                case LEASE_LOST ->
                    timeline.point(
                            LEASE_LOST,
                            lane,
                            event.atMillis(),
                            "lease lost: " + event.sku() + " token " + event.token()
                                    + " (the lock's listener; the worker does not act on it)");
                default -> {}
            }
        }
    }

    private static Mark hold(String outcome, String fill, String meaning) {
        return new Mark(
                "hold " + outcome,
                meaning,
                new SvgTimeline.Bar(8, HOLD_HEIGHT, "fill=\"" + fill + "\" stroke=\"#fff\" stroke-width=\".5\""));
    }

    private static String key(WorkerEvent event) {
        return event.worker() + "/" + event.sku() + "/" + event.token();
    }
}
