package dev.fencing.harness;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * One run's timeline as an inline SVG, for the demo's report and verify's alike: a lane per child, the report's
 * shared {@link TimeAxis} (the same second of two runs, each counted from its own start, stands at the same x), and
 * marks that the tool supplies: spans over the time they last (a lock hold, an operation, a pause, a fault) and
 * points at an instant (a rejection, a lease lost, a violation). The tool says what its marks mean in one list of
 * {@link Mark}s; {@link #legend} draws each of them with the code that draws it on the timeline, and the timeline
 * refuses a mark that is not in that list, so the legend shows every mark the timeline can draw. Labels that would
 * pass the right edge move left ({@link Html#labelX}).
 *
 * <p>Spans are drawn as {@code <rect class="CSS" x=... y=... width=... height=... STYLE>}, points as {@code <g
 * class="CSS">SHAPE<title>...</title></g>}, so that a test finds each mark by what it shows. Not thread-safe: one
 * instance draws one SVG.
 *
 * <pre>{@code
 * Mark accepted = new Mark("hold accepted", "write accepted", new SvgTimeline.Bar(8, 18, "fill=\"#7fb3d5\""));
 * Mark rejected = new Mark("write-rejected", "write rejected", new SvgTimeline.Cross(24, "#c0392b"));
 * List<Mark> marks = List.of(accepted, rejected);
 * SvgTimeline timeline = new SvgTimeline(axis, run.startMillis(), List.of("worker 1", "worker 2"), 34, marks, "fenced");
 * timeline.span(accepted, 0, locked, released, "sku-1 token 7");
 * timeline.point(rejected, 1, refusedAt, "stale write of sku-1 under token 6 rejected");
 * html.append(SvgTimeline.legend(marks)).append(timeline.svg());
 * }</pre>
 */
public final class SvgTimeline {
    /** Where the tick labels stand, above the first lane. */
    private static final int TOP = 20;

    private static final int LEGEND_X = 1;
    private static final int LEGEND_Y = 2;
    private static final int LEGEND_WIDTH = 16;
    private static final int LEGEND_HEIGHT = 10;

    /** How a mark is drawn; {@code dy} is always from the top of its lane. */
    public sealed interface Glyph permits Bar, Hatched, Cross, Triangle, Dot, Rule {}

    /**
     * A rectangle over the time a span lasts, {@code height} px high (0: across every lane), with {@code style} as
     * its SVG attributes ({@code fill="#7fb3d5"}).
     */
    public record Bar(int dy, int height, String style) implements Glyph {}

    /**
     * A rectangle of {@code fill} at a third of its strength, hatched in grey: the part of a span that is no longer
     * what it seems (a lock held after it had passed on).
     */
    public record Hatched(int dy, int height, String fill) implements Glyph {}

    /** An X of {@code colour} centred {@code dy} below its lane's top. */
    public record Cross(int dy, String colour) implements Glyph {}

    /** A triangle pointing up (or down), centred {@code dy} below its lane's top. */
    public record Triangle(int dy, boolean up, String fill, String stroke) implements Glyph {}

    /** A dot of {@code fill}, centred {@code dy} below its lane's top. */
    public record Dot(int dy, String fill) implements Glyph {}

    /** A vertical line of {@code colour}, {@code height} px long, centred {@code dy} below its lane's top. */
    public record Rule(int dy, int height, String colour) implements Glyph {}

    /**
     * One kind of mark: its CSS class on the timeline, what it means in the legend, how it is drawn.
     *
     * @param css the class of each mark of this kind (space-separated classes allowed)
     * @param meaning the legend's words for it
     */
    public record Mark(String css, String meaning, Glyph glyph) {
        public Mark {
            Objects.requireNonNull(css, "css");
            Objects.requireNonNull(meaning, "meaning");
            Objects.requireNonNull(glyph, "glyph");
        }
    }

    private final TimeAxis axis;
    private final long zero;
    private final int lanes;
    private final int laneHeight;
    private final List<Mark> marks;
    private final String id;
    private final int width;
    private final StringBuilder body = new StringBuilder();

    /**
     * @param zero the run's start, epoch ms: x 0 of the axis
     * @param laneLabels the lanes from the top, by their labels
     * @param marks every mark this timeline may draw (the legend's list)
     * @param id unique in the page (the run's label): names this SVG's patterns
     */
    public SvgTimeline(TimeAxis axis, long zero, List<String> laneLabels, int laneHeight, List<Mark> marks, String id) {
        this.axis = axis;
        this.zero = zero;
        this.lanes = laneLabels.size();
        this.laneHeight = laneHeight;
        this.marks = List.copyOf(marks);
        this.id = id;
        this.width = axis.width() + 10;
        for (int lane = 0; lane < lanes; lane++) {
            int y = laneTop(lane);
            body.append(String.format(
                    Locale.ROOT,
                    "<text x=\"4\" y=\"%d\">%s</text><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    y + laneHeight / 2 + 4,
                    Html.escape(laneLabels.get(lane)),
                    axis.left(),
                    y + laneHeight - 1,
                    width,
                    y + laneHeight - 1));
        }
    }

    /** The SVG's width, the same for every timeline on one axis. */
    public int width() {
        return width;
    }

    /** The x of {@code atMillis} (epoch ms) on this run's axis. */
    public double x(long atMillis) {
        return axis.x(atMillis - zero);
    }

    /**
     * Draws {@code mark} from {@code from} to {@code to} (epoch ms, at least 1 px wide) in {@code lane} (from 0 at
     * the top), with {@code title} as its tooltip; returns its width in px.
     *
     * @throws IllegalArgumentException if the mark is not in the legend's list, or is not drawn over time
     */
    public double span(Mark mark, int lane, long from, long to, String title) {
        return span(mark, lane, from, to, title, "");
    }

    /**
     * {@link #span} with {@code style} as this one bar's SVG attributes instead of its mark's (a colour of its own,
     * such as a hue that follows a token, where the legend shows one example of it).
     */
    public double span(Mark mark, int lane, long from, long to, String title, String style) {
        requireListed(mark);
        double x = x(from);
        double w = Math.max(1, x(to) - x);
        int y = mark.glyph() instanceof Bar bar && bar.height() == 0 ? laneTop(0) : laneTop(lane);
        body.append(drawSpan(mark.glyph(), "class=\"" + mark.css() + "\" ", x, y, w, style, title(title)))
                .append('\n');
        return w;
    }

    /**
     * Draws {@code mark} at {@code atMillis} (epoch ms) in {@code lane}, with {@code title} as its tooltip.
     *
     * @throws IllegalArgumentException if the mark is not in the legend's list, or is drawn over time
     */
    public void point(Mark mark, int lane, long atMillis, String title) {
        point(mark, lane, atMillis, title, null, null);
    }

    /** {@link #point}, with {@code label} written in {@code colour} right of it. */
    public void point(Mark mark, int lane, long atMillis, String title, String label, String colour) {
        requireListed(mark);
        double x = x(atMillis);
        int y = laneTop(lane);
        body.append("<g class=\"")
                .append(mark.css())
                .append("\">")
                .append(drawPoint(mark.glyph(), x, y))
                .append(label == null ? "" : text(x + 5, y + laneHeight - 4, label, colour))
                .append(title(title))
                .append("</g>\n");
    }

    /**
     * Writes {@code label} in {@code colour} from {@code atMillis} (epoch ms) on, {@code dy} px below the top of
     * {@code lane}, moved left where it would pass the right edge.
     */
    public void label(int lane, long atMillis, int dy, String label, String colour) {
        body.append(text(x(atMillis) + 2, laneTop(lane) + dy, label, colour)).append('\n');
    }

    /** The whole SVG: tick marks and labels, lanes, every mark drawn so far. */
    public String svg() {
        int height = laneTop(lanes) + 6;
        return String.format(
                        Locale.ROOT,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\""
                                + " font-size=\"10\">%n<defs>%s</defs>%n",
                        width,
                        height,
                        width,
                        height,
                        hatch(id))
                + axis.ticks(TOP - 2, height, TOP - 6)
                + body
                + "</svg>\n";
    }

    /** The legend: each of {@code marks}, drawn as a timeline draws it, with what it means. */
    public static String legend(List<Mark> marks) {
        StringBuilder out = new StringBuilder("<p class=\"legend\">");
        for (Mark mark : marks) {
            out.append("<span class=\"key\"><svg width=\"18\" height=\"14\" viewBox=\"0 0 18 14\">");
            if (mark.glyph() instanceof Hatched) {
                out.append("<defs>").append(hatch("legend")).append("</defs>");
            }
            out.append(
                            isSpan(mark.glyph())
                                    ? drawSpan(
                                            mark.glyph(),
                                            "",
                                            LEGEND_X,
                                            LEGEND_Y,
                                            LEGEND_WIDTH,
                                            LEGEND_HEIGHT,
                                            "legend",
                                            "",
                                            "")
                                    : drawPoint(mark.glyph(), 9, 7, 12))
                    .append("</svg>")
                    .append(Html.escape(mark.meaning()))
                    .append("</span>");
        }
        return out.append("</p>\n").toString();
    }

    private int laneTop(int lane) {
        return TOP + lane * laneHeight;
    }

    private void requireListed(Mark mark) {
        if (!marks.contains(mark)) {
            throw new IllegalArgumentException(
                    "mark " + mark.css() + " (" + mark.meaning() + ") is not in this timeline's legend");
        }
    }

    private String drawSpan(Glyph glyph, String css, double x, int laneY, double w, String extra, String inner) {
        if (glyph instanceof Bar bar) {
            return bar.height() == 0
                    ? drawSpan(glyph, css, x, laneY, w, lanes * laneHeight - 2, id, extra, inner)
                    : drawSpan(glyph, css, x, laneY + bar.dy(), w, bar.height(), id, extra, inner);
        }
        if (glyph instanceof Hatched hatched) {
            return drawSpan(glyph, css, x, laneY + hatched.dy(), w, hatched.height(), id, extra, inner);
        }
        throw new IllegalArgumentException(glyph + " marks an instant, not a span");
    }

    /** A span's drawing, the same on the timeline and in the legend. */
    private static String drawSpan(
            Glyph glyph,
            String css,
            double x,
            int y,
            double w,
            int height,
            String patterns,
            String extra,
            String inner) {
        if (glyph instanceof Bar bar) {
            return String.format(
                    Locale.ROOT,
                    "<rect %sx=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" %s%s>%s</rect>",
                    css,
                    x,
                    y,
                    w,
                    height,
                    extra.isEmpty() ? bar.style() : extra,
                    "",
                    inner);
        }
        if (glyph instanceof Hatched hatched) {
            return String.format(
                    Locale.ROOT,
                    "<rect %sx=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\".35\">"
                            + "</rect><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\""
                            + " fill=\"url(#passed-%s)\">%s</rect>",
                    css,
                    x,
                    y,
                    w,
                    height,
                    hatched.fill(),
                    x,
                    y,
                    w,
                    height,
                    patterns,
                    inner);
        }
        throw new IllegalArgumentException(glyph + " marks an instant, not a span");
    }

    private static boolean isSpan(Glyph glyph) {
        return glyph instanceof Bar || glyph instanceof Hatched;
    }

    private static String drawPoint(Glyph glyph, double x, int laneY) {
        int dy;
        if (glyph instanceof Cross cross) {
            dy = cross.dy();
        } else if (glyph instanceof Triangle triangle) {
            dy = triangle.dy();
        } else if (glyph instanceof Dot dot) {
            dy = dot.dy();
        } else if (glyph instanceof Rule rule) {
            dy = rule.dy();
        } else {
            throw new IllegalArgumentException(glyph + " marks a span, not an instant");
        }
        return drawPoint(glyph, x, laneY + dy, Integer.MAX_VALUE);
    }

    /** A point's drawing centred on (x, y), the same on the timeline and in the legend. */
    private static String drawPoint(Glyph glyph, double x, int y, int longestRule) {
        if (glyph instanceof Cross cross) {
            return String.format(
                    Locale.ROOT,
                    "<path d=\"M%.1f %d l6 6 m0 -6 l-6 6\" stroke=\"%s\" stroke-width=\"2.5\"/>",
                    x - 3,
                    y - 3,
                    cross.colour());
        }
        if (glyph instanceof Triangle triangle) {
            return triangle.up()
                    ? String.format(
                            Locale.ROOT,
                            "<path d=\"M%.1f %d l5 -8 l5 8 z\" fill=\"%s\" stroke=\"%s\"/>",
                            x - 5,
                            y + 4,
                            triangle.fill(),
                            triangle.stroke())
                    : String.format(
                            Locale.ROOT,
                            "<path d=\"M%.1f %d l8 0 l-4 8 z\" fill=\"%s\" stroke=\"%s\"/>",
                            x - 4,
                            y - 4,
                            triangle.fill(),
                            triangle.stroke());
        }
        if (glyph instanceof Dot dot) {
            return String.format(
                    Locale.ROOT,
                    "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"%s\" stroke=\"#000\"/>",
                    x,
                    y,
                    dot.fill());
        }
        if (glyph instanceof Rule rule) {
            int half = Math.min(rule.height(), longestRule) / 2;
            return String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>",
                    x,
                    y - half,
                    x,
                    y + half,
                    rule.colour());
        }
        throw new IllegalArgumentException(glyph + " marks a span, not an instant");
    }

    private String text(double x, int y, String label, String colour) {
        return String.format(
                Locale.ROOT,
                "<text x=\"%.1f\" y=\"%d\"%s>%s</text>",
                Html.labelX(x, label.length(), width),
                y,
                colour == null ? "" : " fill=\"" + colour + "\"",
                Html.escape(label));
    }

    private static String title(String title) {
        return title == null || title.isEmpty() ? "" : "<title>" + Html.escape(title) + "</title>";
    }

    private static String hatch(String id) {
        return "<pattern id=\"passed-" + id + "\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\""
                + " patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"4\" fill=\"#888\"/></pattern>";
    }
}
