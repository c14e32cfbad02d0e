package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ScenarioRunnerTest {

    @Test
    void aRunWaitingForItsPausesGoesOnForTwiceItsDurationAndAtLeastThirtySecondsMore() {
        assertThat(ScenarioRunner.extended(Duration.ofSeconds(10))).isEqualTo(Duration.ofSeconds(40));
        assertThat(ScenarioRunner.extended(Duration.ofSeconds(30))).isEqualTo(Duration.ofSeconds(60));
        assertThat(ScenarioRunner.extended(Duration.ofMinutes(2))).isEqualTo(Duration.ofMinutes(4));
    }
}
