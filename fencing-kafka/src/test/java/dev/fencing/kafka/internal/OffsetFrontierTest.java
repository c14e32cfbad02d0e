package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OffsetFrontierTest {

    private static byte[] key(String k) {
        return k.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void commitsOnlyUpToTheLowestUnfinishedRecordWhenLaterOnesFinishFirst() {
        OffsetFrontier frontier = new OffsetFrontier();
        assertThat(frontier.advance((k, t) -> {})).isEqualTo(-1);
        List<OffsetFrontier.Slot> slots = new ArrayList<>();
        for (long offset : new long[] {10, 11, 13, 17}) { // gaps: transaction markers, compaction
            slots.add(frontier.add(offset));
        }
        Map<String, Long> raised = new LinkedHashMap<>();

        OffsetFrontier.finish(slots.get(1), key("b"), 5);
        OffsetFrontier.finish(slots.get(3), key("d"), 7);
        assertThat(frontier.advance((k, t) -> raised.put(new String(k, StandardCharsets.UTF_8), t)))
                .isEqualTo(10);
        assertThat(raised).isEmpty(); // b's watermark is not handed over before 10 is finished

        OffsetFrontier.finish(slots.get(0), key("a"), 4);
        assertThat(frontier.advance((k, t) -> raised.put(new String(k, StandardCharsets.UTF_8), t)))
                .isEqualTo(13);
        assertThat(raised).containsExactly(Map.entry("a", 4L), Map.entry("b", 5L));
        assertThat(frontier.size()).isEqualTo(2);

        OffsetFrontier.finish(slots.get(2), null, 0); // refused: raised nothing
        assertThat(frontier.advance((k, t) -> raised.put(new String(k, StandardCharsets.UTF_8), t)))
                .isEqualTo(18);
        assertThat(raised).containsKeys("a", "b", "d").hasSize(3);
        assertThat(frontier.size()).isZero();
        assertThat(frontier.committable()).isEqualTo(18);
    }

    @Test
    void refusesAnOffsetNotAboveTheLastOne() {
        OffsetFrontier frontier = new OffsetFrontier();
        frontier.add(5);
        assertThatThrownBy(() -> frontier.add(5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("offset 5 is not above the last one added, 5");
    }
}
