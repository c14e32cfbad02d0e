package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ReplacementBackoffTest {
    @Test
    void aWatchThatKeepsBreakingIsReplacedAfterADoublingWaitThatStopsAtTheMost() {
        long wait = 0;
        StringBuilder waits = new StringBuilder();
        for (int i = 0; i < 7; i++) {
            wait = KeyDeletionWatch.nextBackoffMillis(wait, 666);
            waits.append(wait).append(' ');
        }

        assertThat(waits.toString().trim()).isEqualTo("50 100 200 400 666 666 666");
    }
}
