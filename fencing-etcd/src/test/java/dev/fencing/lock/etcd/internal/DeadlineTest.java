package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.LeaseLoss;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The keep-alive deadline, by both clocks, as a check reads it. No server: jetcd connects lazily. */
class DeadlineTest {
    private final Client client =
            Client.builder().endpoints("http://127.0.0.1:1").build();
    private final EtcdLockRegistry registry = EtcdTesting.registry(client, "unit", Duration.ofSeconds(10));

    @AfterEach
    void close() {
        registry.close();
        client.close();
    }

    private EtcdHold hold() {
        return new EtcdHold(registry, "n", "unit/n", Thread.currentThread(), ByteSequence.EMPTY, null);
    }

    @Test
    void aHoldIsValidUntilATtlLessTheMarginAfterTheSendTimeOfItsLastAnsweredRequest() {
        EtcdHold fresh = hold();
        fresh.firstDeadline(System.nanoTime(), System.currentTimeMillis(), 10);
        EtcdHold stale = hold();
        long tenSecondsAgo = System.nanoTime() - TimeUnit.SECONDS.toNanos(10);
        stale.firstDeadline(tenSecondsAgo + TimeUnit.MILLISECONDS.toNanos(150), System.currentTimeMillis(), 10);

        assertThat(registry.isValid(fresh)).isTrue();
        // sent 9.85 s ago with a 10 s TTL: inside the TTL, but not inside the 2 % margin
        assertThat(registry.isValid(stale)).isFalse();
        assertThat(stale.loss()).isEqualTo(LeaseLoss.SESSION_LOST);
    }

    @Test
    void aLateAnswerToAnOlderRequestDoesNotMoveTheDeadlineBack() {
        EtcdHold hold = hold();
        long now = System.nanoTime();
        long wall = System.currentTimeMillis();
        hold.firstDeadline(now, wall, 10);
        long deadline = hold.validUntilNanos();

        hold.aliveUntil(now - TimeUnit.SECONDS.toNanos(5), wall - 5_000, 10);

        assertThat(hold.validUntilNanos()).isEqualTo(deadline);
    }

    /**
     * {@code System.nanoTime} stands still while the machine sleeps (a suspended laptop), etcd's leader does
     * not: the wall-clock deadline is what ends the lease then.
     */
    @Test
    void aHoldWhoseWallClockDeadlinePassedIsInvalidThoughTheMonotonicOneHasNot() {
        EtcdHold hold = hold();
        hold.firstDeadline(System.nanoTime(), System.currentTimeMillis(), 10);
        assertThat(registry.isValid(hold)).isTrue();

        hold.wallDeadlineForTest(System.currentTimeMillis() - 1);

        assertThat(registry.isValid(hold)).isFalse();
        assertThat(hold.loss()).isEqualTo(LeaseLoss.SESSION_LOST);
    }

    @Test
    void eachAnsweredKeepAliveSetsBothClocksDeadlinesSoAWallClockSteppedBackDoesNotLeaveAnOldOne() {
        EtcdHold hold = hold();
        long now = System.nanoTime();
        long wall = System.currentTimeMillis();
        hold.firstDeadline(now, wall, 10);

        // the wall clock is stepped back 30 s, then a keep-alive sent a second later is answered
        hold.aliveUntil(now + TimeUnit.SECONDS.toNanos(1), wall - 29_000, 10);

        // the wall deadline is this request's, 9.8 s after its send time by the stepped clock, not the old one
        assertThat(hold.validUntilWallMillis()).isEqualTo(wall - 29_000 + 9_800);
        assertThat(hold.validUntilNanos())
                .isEqualTo(now + TimeUnit.SECONDS.toNanos(1) + TimeUnit.MILLISECONDS.toNanos(9_800));
    }
}
