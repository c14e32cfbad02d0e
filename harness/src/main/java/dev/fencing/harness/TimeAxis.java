package dev.fencing.harness;

import java.util.Locale;

/**
 * The time axis of a report's timelines: one scale for every run of a report, so that the same second of two runs
 * (each counted from its own start) stands at the same x and the runs can be compared by eye. Covers {@code lead}
 * milliseconds before a run's zero up to {@code span} after it, between x = {@code left} and x = {@code width}.
 * Immutable and thread-safe.
 *
 * <pre>{@code
 * TimeAxis axis = TimeAxis.of(0, longestRunMillis, 90, 1100);
 * double x = axis.x(event.atMillis() - run.startMillis());
 * svg.append(axis.ticks(0, height - 14, height - 2));
 * }</pre>
 */
public final class TimeAxis {
    private static final int MIN_TICK_PIXELS = 40;

    private final long lead;
    private final long span;
    private final int left;
    private final int width;
    private final double scale;

    private TimeAxis(long lead, long span, int left, int width) {
        this.lead = lead;
        this.span = span;
        this.left = left;
        this.width = width;
        this.scale = (width - left) / (double) (lead + span);
    }

    /**
     * @param lead how much before a run's zero the axis starts, in milliseconds (0 or more)
     * @param span how long after it the axis ends, in milliseconds (the longest run of the report)
     * @param left the x of the axis's start (lane labels stand left of it)
     * @param width the x of its end
     */
    public static TimeAxis of(long lead, long span, int left, int width) {
        if (lead < 0 || left < 0 || width <= left) {
            throw new IllegalArgumentException("a time axis needs lead >= 0 and 0 <= left < width: lead " + lead
                    + ", left " + left + ", width " + width);
        }
        return new TimeAxis(lead, Math.max(1, span), left, width);
    }

    /** The x of {@code millis} after a run's zero (negative: before it). */
    public double x(long millis) {
        return left + (millis + lead) * scale;
    }

    /** How wide {@code millis} are. */
    public double length(long millis) {
        return millis * scale;
    }

    public int left() {
        return left;
    }

    public int width() {
        return width;
    }

    /** How long after a run's zero the axis ends. */
    public long span() {
        return span;
    }

    /**
     * A grey grid line from {@code top} to {@code bottom} and a label ({@code 5s}) at {@code labelY} for each tick
     * from the run's zero on, every 5 s, or every multiple of 5 s that keeps labels apart; a label that would pass
     * the axis's end stands left of its line.
     */
    public String ticks(int top, int bottom, int labelY) {
        long step = 5_000;
        while (length(step) < MIN_TICK_PIXELS) {
            step += 5_000;
        }
        StringBuilder out = new StringBuilder();
        for (long t = 0; t <= span; t += step) {
            double tx = x(t);
            String label = t / 1_000 + "s";
            out.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                            + "<text x=\"%.1f\" y=\"%d\" fill=\"#888\">%s</text>%n",
                    tx,
                    top,
                    tx,
                    bottom,
                    Html.labelX(tx + 2, label.length(), width),
                    labelY,
                    label));
        }
        return out.toString();
    }
}
