package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.harness.UsageException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class SessionTimeoutsTest {

    @Test
    void refusesAPauseThatDoesNotExceedTheGrantedTimeoutNamingBothNumbers() {
        // an ensemble with the default 2 s tickTime grants 4 s when 2 s is asked
        assertThatThrownBy(() -> SessionTimeouts.requirePauseLonger(
                        Duration.ofSeconds(3), Duration.ofSeconds(2), Duration.ofSeconds(4)))
                .isInstanceOf(UsageException.class)
                .hasMessage("ZooKeeper granted a session timeout of 4s when 2s was asked (--session-timeout), and"
                        + " --pause 3s does not exceed it: a frozen worker would keep its lock; use --pause 6s or"
                        + " more");
        assertThatThrownBy(() -> SessionTimeouts.requirePauseLonger(
                        Duration.ofSeconds(4), Duration.ofSeconds(2), Duration.ofSeconds(4)))
                .isInstanceOf(UsageException.class);
    }

    @Test
    void acceptsAPauseLongerThanTheGrantedTimeout() {
        assertThatCode(() -> SessionTimeouts.requirePauseLonger(
                        Duration.ofSeconds(3), Duration.ofSeconds(2), Duration.ofSeconds(2)))
                .doesNotThrowAnyException();
    }
}
