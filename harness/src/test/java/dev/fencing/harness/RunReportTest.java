package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RunReportTest {
    @Test
    void thePageHasTheHeadingSettingsTableLegendThenASectionPerRunOnOneAxis() {
        List<TimeAxis> axes = new ArrayList<>();
        RunReport<String> report = RunReport.<String>builder()
                .title("demo <report>")
                .heading("runs & pauses")
                .css("body{margin:0}")
                .settingsNote(". <b>note</b>")
                .table(RunTable.fitted(run -> run, List.of(RunTable.row("letters", run -> "" + run.length())), 9))
                .explanation("<p>what the rows mean</p>\n")
                .legend("<p class=\"legend\">marks</p>\n")
                .axis(runs -> TimeAxis.of(0, 1_000, 90, 1_000))
                .runHeading(run -> run + " run")
                .section((html, run, axis) -> {
                    axes.add(axis);
                    html.append("<svg>").append(run).append("</svg>\n");
                })
                .build();

        String html = report.html(List.of("unfenced", "fenced"), "workers=2 <x>");

        assertThat(html)
                .startsWith("<!DOCTYPE html>")
                .contains("<title>demo &lt;report&gt;</title>", RunReport.CSS + "body{margin:0}")
                .contains("<h1>runs &amp; pauses</h1>\n"
                        + "<p>workers=2 &lt;x&gt;. <b>note</b></p>\n"
                        + "<table><tr><th></th><th>unfenced</th><th>fenced</th></tr>\n"
                        + "<tr><td>letters</td><td class=\"n\">8</td><td class=\"n\">6</td></tr>\n"
                        + "</table>\n"
                        + "<p>what the rows mean</p>\n"
                        + "<p class=\"legend\">marks</p>\n"
                        + "<h2>unfenced run</h2>\n<svg>unfenced</svg>\n"
                        + "<h2>fenced run</h2>\n<svg>fenced</svg>\n"
                        + "</body></html>\n");
        assertThat(axes).hasSize(2);
        assertThat(axes.get(0)).isSameAs(axes.get(1));
    }

    @Test
    void buildingFailsNamingTheFirstMissingPart() {
        assertThatThrownBy(() ->
                        RunReport.<String>builder().title("t").heading("h").build())
                .hasMessage("a run report needs its table");
        assertThatThrownBy(() -> RunReport.<String>builder().title(" "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("title must not be blank");
    }
}
