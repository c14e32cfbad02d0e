package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.TypeConversionException;

class DurationsTest {
    private final Durations durations = new Durations("use for example 40s", "500ms, 40s or PT40S");

    @Test
    void parsesHumanAndIsoDurations() {
        assertThat(durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(durations.parse("2s")).isEqualTo(Duration.ofSeconds(2));
        assertThat(durations.parse("1.5s")).isEqualTo(Duration.ofMillis(1_500));
        assertThat(durations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(durations.parse("1h")).isEqualTo(Duration.ofHours(1));
        assertThat(durations.parse("PT0.25S")).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void refusesNegativeAndUnreadableValuesWithTheCallersExamples() {
        assertThatThrownBy(() -> durations.parse("-1s"))
                .isInstanceOf(TypeConversionException.class)
                .hasMessage("'-1s' is negative; use for example 40s");
        assertThatThrownBy(() -> durations.parse("PT-1S")).hasMessage("'PT-1S' is negative; use for example 40s");
        assertThatThrownBy(() -> durations.parse("soon"))
                .hasMessage("'soon' is not a duration; use for example 500ms, 40s or PT40S");
    }

    @Test
    void formatsAsAUserTypes() {
        assertThat(Durations.format(Duration.ofHours(2))).isEqualTo("2h");
        assertThat(Durations.format(Duration.ofMinutes(10))).isEqualTo("10m");
        assertThat(Durations.format(Duration.ofSeconds(40))).isEqualTo("40s");
        assertThat(Durations.format(Duration.ofMillis(1_500))).isEqualTo("1.5s");
        assertThat(Durations.format(Duration.ofMillis(500))).isEqualTo("500ms");
        assertThat(Durations.format(Duration.ZERO)).isEqualTo("0s");
    }
}
