package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class RunTableTest {
    @Test
    void labelsAlignLeftAndEveryRunsCellAlignsRightInItsColumn() {
        StringBuilder table = new StringBuilder();

        RunTable.row(table, "", 8, List.of("unfenced", "fenced"), run -> run, 10);
        RunTable.row(table, "orders", 8, List.of("unfenced", "fenced"), run -> Integer.toString(run.length()), 10);

        assertThat(table.toString()).isEqualTo("          unfenced    fenced\n" + "orders           8         6\n");
    }
}
