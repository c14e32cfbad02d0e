package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.nio.channels.ClosedChannelException;
import org.junit.jupiter.api.Test;

/**
 * Which failures a request is sent again after. ClusterIT saw the one with a closed channel: a waiter's create
 * was in flight to the member the test killed, and the acquire failed instead of trying the next member.
 */
class RequestsTest {
    @Test
    void aConnectionClosedUnderARequestIsWorthRetrying() {
        Throwable failure = Status.UNKNOWN
                .withDescription("channel closed")
                .withCause(new ClosedChannelException())
                .asRuntimeException();
        assertThat(Requests.worthRetrying(failure)).isTrue();
    }

    @Test
    void anUnavailableMemberIsWorthRetryingAndARefusalIsNot() {
        assertThat(Requests.worthRetrying(Status.UNAVAILABLE.asRuntimeException()))
                .isTrue();
        assertThat(Requests.worthRetrying(Status.FAILED_PRECONDITION
                        .withDescription("etcdserver: requested lease not found")
                        .asRuntimeException()))
                .isFalse();
    }
}
