package dev.fencing.harness;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The side-by-side table of a report: a header naming each run, then one row per measure, so that the runs compare
 * line by line. The tool supplies the rows (a label and how to print a run's cell); the table renders them as the
 * console's text (the label left-aligned in a fixed width, then one right-aligned column per run) and as the HTML
 * report's {@code <table>}. Immutable and thread-safe if the row functions are.
 *
 * <pre>{@code
 * RunTable<RunResult> table = RunTable.fitted(
 *         run -> run.mode().label(),
 *         List.of(
 *                 RunTable.row("orders accepted", run -> Long.toString(run.orders())),
 *                 RunTable.check("invariants hold", run -> run.invariantsHold())),
 *         13);
 * System.out.print(table.text(runs));
 * html.append(table.html(runs));
 * }</pre>
 *
 * @param <R> one run's result
 */
public final class RunTable<R> {
    private final Function<R, String> header;
    private final List<Row<R>> rows;
    private final int labelWidth;
    private final int cellWidth;

    private RunTable(Function<R, String> header, List<Row<R>> rows, int labelWidth, int cellWidth) {
        this.header = Objects.requireNonNull(header, "header");
        this.rows = List.copyOf(rows);
        if (labelWidth < 1 || cellWidth < 1) {
            throw new IllegalArgumentException(
                    "label and cell widths must be positive, not " + labelWidth + " and " + cellWidth);
        }
        this.labelWidth = labelWidth;
        this.cellWidth = cellWidth;
    }

    /**
     * A table whose labels take {@code labelWidth} characters and every run's cell {@code cellWidth} (a longer one
     * pushes the rest of its line right).
     */
    public static <R> RunTable<R> of(Function<R, String> header, List<Row<R>> rows, int labelWidth, int cellWidth) {
        return new RunTable<>(header, rows, labelWidth, cellWidth);
    }

    /** A table whose label column is as wide as its longest label and two spaces. */
    public static <R> RunTable<R> fitted(Function<R, String> header, List<Row<R>> rows, int cellWidth) {
        int labelWidth =
                rows.stream().mapToInt(row -> row.label().length()).max().orElse(10) + 2;
        return new RunTable<>(header, rows, labelWidth, cellWidth);
    }

    /** A row: {@code label}, then each run's {@code cell}. */
    public static <R> Row<R> row(String label, Function<R, String> cell) {
        return new Row<>(label, Objects.requireNonNull(cell, "cell"), null);
    }

    /** A row that says whether each run passes a check: {@code yes} or {@code NO}, in green or red in HTML. */
    public static <R> Row<R> check(String label, Predicate<R> holds) {
        Objects.requireNonNull(holds, "holds");
        return new Row<>(label, run -> holds.test(run) ? "yes" : "NO", holds);
    }

    /** A line that heads the rows after it and has no cells ({@code faults injected}). */
    public static <R> Row<R> heading(String label) {
        return new Row<>(label, null, null);
    }

    /**
     * One line of the table.
     *
     * @param label what the row measures
     * @param cell a run's cell, or {@code null} for a heading line without cells
     * @param check for a {@link RunTable#check} row, whether a run passes; else {@code null}
     */
    public record Row<R>(String label, Function<R, String> cell, Predicate<R> check) {
        public Row {
            Objects.requireNonNull(label, "label");
        }
    }

    /** The console's text: the header line, then a line per row, each ending in a line break. */
    public String text(List<R> runs) {
        StringBuilder table = new StringBuilder();
        line(table, "", runs, header);
        for (Row<R> row : rows) {
            if (row.cell() == null) {
                table.append(row.label()).append('\n');
            } else {
                line(table, row.label(), runs, row.cell());
            }
        }
        return table.toString();
    }

    /**
     * The HTML {@code <table>} of the same rows, one line per row: cells right-aligned (class {@code n}), a check's
     * cells also {@code ok} or {@code bad}; a heading spans the row; a label indented on the console has class {@code
     * sub} instead of its leading spaces. Everything is escaped.
     */
    public String html(List<R> runs) {
        StringBuilder table = new StringBuilder("<table><tr><th></th>");
        for (R run : runs) {
            table.append("<th>").append(Html.escape(header.apply(run))).append("</th>");
        }
        table.append("</tr>\n");
        for (Row<R> row : rows) {
            if (row.cell() == null) {
                table.append("<tr><th colspan=\"")
                        .append(runs.size() + 1)
                        .append("\">")
                        .append(Html.escape(row.label()))
                        .append("</th></tr>\n");
                continue;
            }
            String label = row.label().stripLeading();
            // HTML collapses the spaces that indent a sub-row on the console: indent it by its class instead
            table.append(label.length() < row.label().length() ? "<tr><td class=\"sub\">" : "<tr><td>")
                    .append(Html.escape(label))
                    .append("</td>");
            for (R run : runs) {
                String css = row.check() == null ? "" : row.check().test(run) ? " ok" : " bad";
                table.append("<td class=\"n")
                        .append(css)
                        .append("\">")
                        .append(Html.escape(row.cell().apply(run)))
                        .append("</td>");
            }
            table.append("</tr>\n");
        }
        return table.append("</table>\n").toString();
    }

    /** The rows, in order. */
    public List<Row<R>> rows() {
        return rows;
    }

    private void line(StringBuilder table, String label, List<R> runs, Function<R, String> cell) {
        table.append(String.format(Locale.ROOT, "%-" + labelWidth + "s", label));
        for (R run : runs) {
            table.append(String.format(Locale.ROOT, "%" + cellWidth + "s", cell.apply(run)));
        }
        table.append('\n');
    }
}
