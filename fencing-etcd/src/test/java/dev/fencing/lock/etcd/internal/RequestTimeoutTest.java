package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How long one request to etcd is waited for, by lease TTL. */
class RequestTimeoutTest {
    @Test
    void aShortTtlStillWaitsLongEnoughForAFailover() {
        assertThat(EtcdLockRegistry.requestTimeout(Duration.ofSeconds(2))).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void aTtlBetweenTheBoundsIsTheTimeout() {
        assertThat(EtcdLockRegistry.requestTimeout(Duration.ofSeconds(20))).isEqualTo(Duration.ofSeconds(20));
    }

    @Test
    void aLongTtlDoesNotLetOneRequestWaitForIt() {
        assertThat(EtcdLockRegistry.requestTimeout(Duration.ofHours(1))).isEqualTo(Duration.ofSeconds(30));
    }
}
