package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.harness.SvgTimeline.Mark;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class SvgTimelineTest {
    private static final Mark HELD = new Mark("hold", "lock held", new SvgTimeline.Bar(8, 18, "fill=\"#7fb3d5\""));
    private static final Mark PASSED = new Mark("passed", "after it passed on", new SvgTimeline.Hatched(8, 18, "#888"));
    private static final Mark BAND = new Mark("band", "across the lanes", new SvgTimeline.Bar(0, 0, "fill=\"#eef\""));
    private static final Mark REJECTED = new Mark("rejected", "rejected", new SvgTimeline.Cross(23, "#c0392b"));
    private static final Mark STALE =
            new Mark("stale", "stale accepted", new SvgTimeline.Triangle(24, true, "#e67e22", "#000"));
    private static final Mark VIOLATION =
            new Mark("violation", "violation", new SvgTimeline.Triangle(-1, false, "#d50000", "none"));
    private static final Mark REFUSED = new Mark("refused", "lease check", new SvgTimeline.Dot(24, "#c39bd3"));
    private static final Mark LOST = new Mark("lost", "lease lost", new SvgTimeline.Rule(17, 26, "#8e44ad"));
    private static final List<Mark> MARKS = List.of(HELD, PASSED, BAND, REJECTED, STALE, VIOLATION, REFUSED, LOST);

    private static final TimeAxis AXIS = TimeAxis.of(0, 10_000, 90, 1100);

    private static SvgTimeline timeline(long zero) {
        return new SvgTimeline(AXIS, zero, List.of("worker 1", "worker 2"), 34, MARKS, "run");
    }

    /** Every match of {@code regex}'s first group in {@code text}. */
    private static List<String> all(String regex, String text) {
        List<String> found = new ArrayList<>();
        Matcher matcher = Pattern.compile(regex).matcher(text);
        while (matcher.find()) {
            found.add(matcher.group(1));
        }
        return found;
    }

    /** A drawing without its place: numbers blanked, CSS class and pattern name dropped. */
    private static String shape(String element) {
        return element.replaceAll("class=\"[^\"]*\" ", "")
                .replaceAll("=\"-?[0-9.]+\"", "=\"\"")
                .replaceAll("d=\"M-?[0-9.]+ -?[0-9.]+ ", "d=\"M ")
                .replaceAll("url\\(#passed-[a-z]+\\)", "url()");
    }

    @Test
    void theLegendDrawsEveryMarkAsTheTimelineDrawsIt() {
        // given
        SvgTimeline timeline = timeline(1_000);
        timeline.span(HELD, 0, 1_000, 2_000, "sku-1 token 7");
        timeline.span(PASSED, 0, 2_000, 2_500, "passed on");
        timeline.span(BAND, 0, 3_000, 4_000, "leader kill");
        timeline.point(REJECTED, 1, 3_000, "stale write rejected", "claim refused at read", "#c0392b");
        timeline.point(STALE, 1, 3_500, "stale write accepted");
        timeline.point(VIOLATION, 1, 3_600, "violation 1");
        timeline.point(REFUSED, 1, 4_000, "lease check refused");
        timeline.point(LOST, 0, 4_500, "lease lost");

        // when
        String svg = timeline.svg();
        String legend = shape(SvgTimeline.legend(MARKS));

        // then
        List<String> drawn = new ArrayList<>(all("(<rect class=\"[a-z ]+\" [^>]*>)", svg));
        drawn.addAll(all("<g class=\"[a-z-]+\">(<[a-z]+ [^>]*>)", svg));
        assertThat(drawn).hasSize(8).allSatisfy(mark -> assertThat(legend).contains(shape(mark)));
        assertThat(legend).contains("lock held", "after it passed on", "lease lost");
    }

    @Test
    void aMarkOutsideTheLegendIsRefused() {
        Mark unlisted = new Mark("other", "not in the legend", new SvgTimeline.Bar(0, 10, "fill=\"#000\""));

        assertThatThrownBy(() -> timeline(0).span(unlisted, 0, 0, 1_000, "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not in this timeline's legend");
        assertThatThrownBy(() -> timeline(0).point(HELD, 0, 0, "a span drawn as an instant"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void twoRunsOnOneAxisPutTheSameSecondAtTheSameX() {
        SvgTimeline first = timeline(1_000);
        SvgTimeline second = timeline(61_000);
        first.span(HELD, 0, 3_000, 4_000, "first");
        second.span(HELD, 0, 63_000, 64_000, "second");

        assertThat(all("<rect class=\"hold\" x=\"([0-9.]+)\"", second.svg()))
                .isEqualTo(all("<rect class=\"hold\" x=\"([0-9.]+)\"", first.svg()))
                .hasSize(1);
        assertThat(first.width()).isEqualTo(second.width()).isEqualTo(1110);
    }

    @Test
    void noLabelPassesTheRightEdge() {
        SvgTimeline timeline = timeline(0);
        timeline.label(0, 9_990, 14, "SIGSTOP sku-2 t3 (not taken over)", "#000");
        timeline.point(REJECTED, 1, 9_995, "late", "claim refused at read", "#c0392b");

        Matcher texts = Pattern.compile("<text x=\"([0-9.]+)\" y=\"[0-9]+\"[^>]*>([^<]*)</text>")
                .matcher(timeline.svg());
        int count = 0;
        while (texts.find()) {
            count++;
            assertThat(Double.parseDouble(texts.group(1)) + texts.group(2).length() * 6.1)
                    .as(texts.group(2))
                    .isLessThanOrEqualTo(1110);
        }
        assertThat(count).isGreaterThanOrEqualTo(4); // two lane labels, two marks' labels, the ticks
    }
}
