package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class RunTableTest {
    private static final List<String> RUNS = List.of("unfenced", "fenced");

    @Test
    void labelsAlignLeftAndEveryRunsCellAlignsRightInItsColumn() {
        RunTable<String> table =
                RunTable.of(run -> run, List.of(RunTable.row("orders", run -> Integer.toString(run.length()))), 8, 10);

        assertThat(table.text(RUNS)).isEqualTo("          unfenced    fenced\n" + "orders           8         6\n");
    }

    @Test
    void aFittedTableIsAsWideAsItsLongestLabelAndAHeadingHasNoCells() {
        RunTable<String> table = RunTable.fitted(
                run -> run,
                List.of(
                        RunTable.heading("sizes"),
                        RunTable.row("  letters", run -> Integer.toString(run.length())),
                        RunTable.check("fenced", run -> run.equals("fenced"))),
                9);

        assertThat(table.text(RUNS))
                .isEqualTo("            unfenced   fenced\n"
                        + "sizes\n"
                        + "  letters          8        6\n"
                        + "fenced            NO      yes\n");
    }

    @Test
    void theHtmlTableHasTheSameRowsEscapedWithSubRowsAndChecksMarkedByClass() {
        RunTable<String> table = RunTable.fitted(
                run -> run,
                List.of(
                        RunTable.heading("sizes"),
                        RunTable.row("  <letters>", run -> run.length() + " & more"),
                        RunTable.check("fenced", run -> run.equals("fenced"))),
                9);

        assertThat(table.html(RUNS))
                .isEqualTo("<table><tr><th></th><th>unfenced</th><th>fenced</th></tr>\n"
                        + "<tr><th colspan=\"3\">sizes</th></tr>\n"
                        + "<tr><td class=\"sub\">&lt;letters&gt;</td><td class=\"n\">8 &amp; more</td>"
                        + "<td class=\"n\">6 &amp; more</td></tr>\n"
                        + "<tr><td>fenced</td><td class=\"n bad\">NO</td><td class=\"n ok\">yes</td></tr>\n"
                        + "</table>\n");
    }

    @Test
    void widthsMustBePositive() {
        assertThatThrownBy(() -> RunTable.<String>of(run -> run, List.of(), 0, 10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0 and 10");
    }
}
