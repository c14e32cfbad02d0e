package dev.fencing.harness;

import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The side-by-side table the tools print on the console: one row per measure, its label left-aligned, then one
 * right-aligned column per run, so that the runs compare line by line. Stateless and thread-safe.
 *
 * <pre>{@code
 * StringBuilder table = new StringBuilder();
 * RunTable.row(table, "", 40, runs, run -> run.mode().label(), 13);
 * RunTable.row(table, "orders accepted", 40, runs, run -> Long.toString(run.orders()), 13);
 * }</pre>
 */
public final class RunTable {
    private RunTable() {}

    /** Appends one row and its line break: {@code label} in {@code labelWidth}, then each run's cell. */
    public static <R> void row(
            StringBuilder table, String label, int labelWidth, List<R> runs, Function<R, String> cell, int cellWidth) {
        table.append(String.format(Locale.ROOT, "%-" + labelWidth + "s", label));
        for (R run : runs) {
            table.append(String.format(Locale.ROOT, "%" + cellWidth + "s", cell.apply(run)));
        }
        table.append('\n');
    }
}
