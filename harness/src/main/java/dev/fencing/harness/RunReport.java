package dev.fencing.harness;

import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * The HTML report of a tool's runs, laid out the same for every tool: a heading, the settings, the side-by-side
 * {@link RunTable}, what the table's rows mean, the timelines' legend, then a section per run under its own heading
 * (its timeline, drawn on one {@link TimeAxis} for every run, and what goes with it). The tool supplies the words,
 * the rows, the axis and each run's section; the report lays them out as one self-contained page ({@link
 * Html#page}). Immutable and thread-safe if what the tool supplies is.
 *
 * <pre>{@code
 * RunReport<RunResult> report = RunReport.<RunResult>builder()
 *         .title("fencing demo")
 *         .heading("Inventory under pauses")
 *         .table(RunTable.fitted(run -> run.mode().label(), rows, 13))
 *         .legend(SvgTimeline.legend(MARKS))
 *         .axis(HtmlTimeline::axis)
 *         .runHeading(run -> run.mode().label() + " run")
 *         .section((html, run, axis) -> HtmlTimeline.svg(html, run, axis))
 *         .build();
 * String page = report.html(runs, settings.toString());
 * }</pre>
 *
 * @param <R> one run's result
 */
public final class RunReport<R> {
    /** The style of what the report itself draws: the table, the legend and the timelines' text. */
    static final String CSS =
            "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 12px}"
                    + "td.n{text-align:right;font-variant-numeric:tabular-nums}td.sub{padding-left:2em}th{background:#f3f3f3}"
                    + ".bad{color:#b00020;font-weight:bold}.ok{color:#1b7f3b;font-weight:bold}"
                    + "svg text{font-size:10px;font-family:monospace}.legend .key{display:inline-block;margin:0 14px 4px 0}"
                    + ".legend svg{vertical-align:middle;margin-right:4px}";

    private final String title;
    private final String heading;
    private final String css;
    private final String settingsNote;
    private final RunTable<R> table;
    private final String explanation;
    private final String legend;
    private final Function<List<R>, TimeAxis> axis;
    private final Function<R, String> runHeading;
    private final Section<R> section;

    private RunReport(Builder<R> builder) {
        this.title = require(builder.title, "title");
        this.heading = require(builder.heading, "heading");
        this.css = builder.css;
        this.settingsNote = builder.settingsNote;
        this.table = require(builder.table, "table");
        this.explanation = builder.explanation;
        this.legend = require(builder.legend, "legend");
        this.axis = require(builder.axis, "axis");
        this.runHeading = require(builder.runHeading, "runHeading");
        this.section = require(builder.section, "section");
    }

    public static <R> Builder<R> builder() {
        return new Builder<>();
    }

    /** What the tool draws under a run's heading: its timeline on the report's axis, and what goes with it. */
    @FunctionalInterface
    public interface Section<R> {
        void append(StringBuilder html, R run, TimeAxis axis);
    }

    /** The page: {@code settings} (escaped) are the run's settings as the console printed them. */
    public String html(List<R> runs, String settings) {
        StringBuilder html = new StringBuilder();
        html.append("<h1>").append(Html.escape(heading)).append("</h1>\n");
        html.append("<p>").append(Html.escape(settings)).append(settingsNote).append("</p>\n");
        html.append(table.html(runs));
        html.append(explanation);
        html.append(legend);
        TimeAxis shared = axis.apply(runs);
        for (R run : runs) {
            html.append("<h2>").append(Html.escape(runHeading.apply(run))).append("</h2>\n");
            section.append(html, run, shared);
        }
        return Html.page(title, CSS + css, html);
    }

    /** The table the page shows, for the console. */
    public RunTable<R> table() {
        return table;
    }

    private static <T> T require(T value, String name) {
        return Objects.requireNonNull(value, () -> "a run report needs its " + name);
    }

    /** Collects a report's parts; every part but the style and the notes is required. Not thread-safe. */
    public static final class Builder<R> {
        private String title;
        private String heading;
        private String css = "";
        private String settingsNote = "";
        private RunTable<R> table;
        private String explanation = "";
        private String legend;
        private Function<List<R>, TimeAxis> axis;
        private Function<R, String> runHeading;
        private Section<R> section;

        private Builder() {}

        /** The page's title (escaped). */
        public Builder<R> title(String title) {
            this.title = notBlank(title, "title");
            return this;
        }

        /** The page's heading (escaped). */
        public Builder<R> heading(String heading) {
            this.heading = notBlank(heading, "heading");
            return this;
        }

        /** Style rules after the report's own (the page's body, the tool's sections). */
        public Builder<R> css(String css) {
            this.css = Objects.requireNonNull(css, "css");
            return this;
        }

        /** HTML after the settings in their paragraph (what the settings mean). */
        public Builder<R> settingsNote(String html) {
            this.settingsNote = Objects.requireNonNull(html, "settingsNote");
            return this;
        }

        public Builder<R> table(RunTable<R> table) {
            this.table = Objects.requireNonNull(table, "table");
            return this;
        }

        /** HTML after the table (what its rows mean). */
        public Builder<R> explanation(String html) {
            this.explanation = Objects.requireNonNull(html, "explanation");
            return this;
        }

        /** The timelines' legend ({@link SvgTimeline#legend}). */
        public Builder<R> legend(String html) {
            this.legend = Objects.requireNonNull(html, "legend");
            return this;
        }

        /** The one axis every run's timeline stands on. */
        public Builder<R> axis(Function<List<R>, TimeAxis> axis) {
            this.axis = Objects.requireNonNull(axis, "axis");
            return this;
        }

        /** A run's section heading (escaped). */
        public Builder<R> runHeading(Function<R, String> runHeading) {
            this.runHeading = Objects.requireNonNull(runHeading, "runHeading");
            return this;
        }

        public Builder<R> section(Section<R> section) {
            this.section = Objects.requireNonNull(section, "section");
            return this;
        }

        /** The report; fails naming the first part missing. */
        public RunReport<R> build() {
            return new RunReport<>(this);
        }

        private static String notBlank(String value, String name) {
            if (value == null || value.isBlank()) {
                throw new IllegalArgumentException("a run report's " + name + " must not be blank, not " + value);
            }
            return value;
        }
    }
}
