package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class EmbeddedKafkaPortsTest {

    @Test
    void portsChosenTogetherAreAlwaysDistinct() {
        for (int i = 0; i < 200; i++) {
            int[] ports = EmbeddedKafka.freePorts(2);
            assertThat(Arrays.stream(ports).distinct().count())
                    .as("ports %s", Arrays.toString(ports))
                    .isEqualTo(2);
        }
    }
}
