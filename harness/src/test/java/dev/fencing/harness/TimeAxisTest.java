package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class TimeAxisTest {
    @Test
    void putsTheSameSecondOfEveryRunAtTheSameX() {
        TimeAxis axis = TimeAxis.of(1_000, 9_000, 100, 1_100);

        assertThat(axis.x(-1_000)).isCloseTo(100, within(0.01));
        assertThat(axis.x(0)).isCloseTo(200, within(0.01));
        assertThat(axis.x(9_000)).isCloseTo(1_100, within(0.01));
        assertThat(axis.length(1_000)).isCloseTo(100, within(0.01));
    }

    @Test
    void ticksEveryFiveSecondsOrCoarserSoThatLabelsStayApart() {
        String fine = TimeAxis.of(0, 20_000, 0, 1_000).ticks(0, 100, 110);
        String coarse = TimeAxis.of(0, 600_000, 0, 1_000).ticks(0, 100, 110);

        assertThat(fine).contains(">0s<", ">5s<", ">10s<", ">15s<", ">20s<");
        assertThat(coarse).contains(">0s<", ">25s<", ">50s<").doesNotContain(">5s<");
    }

    @Test
    void aTickAtTheEndOfTheAxisKeepsItsLabelInside() {
        String ticks = TimeAxis.of(0, 25_000, 100, 1_100).ticks(0, 100, 110);

        // the 25s tick stands at x = 1100, the axis's end: its label ends there instead of past it
        assertThat(ticks)
                .contains("<line x1=\"1100.0\"")
                .contains("<text x=\"1079.7\" y=\"110\" fill=\"#888\">25s</text>");
    }

    @Test
    void movesALabelLeftRatherThanLetItBeCut() {
        assertThat(Html.labelX(10, 10, 1_000)).isEqualTo(10);
        assertThat(Html.labelX(990, 10, 1_000)).isCloseTo(1_000 - 2 - 61, within(0.01));
    }
}
