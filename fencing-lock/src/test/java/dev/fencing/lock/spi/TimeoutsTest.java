package dev.fencing.lock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class TimeoutsTest {

    @Test
    void aWaitOfCenturiesIsCappedToOneWhoseDeadlineCannotWrapPastNow() {
        Duration forever = Timeouts.capped(Duration.ofSeconds(Long.MAX_VALUE));
        assertThat(forever).isEqualTo(Timeouts.LONGEST);
        long now = System.nanoTime();
        long deadline = now + forever.toNanos();
        assertThat(deadline - now).isPositive();
        assertThat(Timeouts.capped(Duration.ofSeconds(5))).isEqualTo(Duration.ofSeconds(5));
    }
}
