package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.TcpRelay;
import io.etcd.jetcd.Client;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The keep-alives' gRPC streams, counted on the client by an interceptor: one that is given up on (unanswered
 * within its period) is ended, not left open for as long as the server stays silent. A keep-alive that cannot be sent
 * ends its lease.
 */
class KeepAlivesIT {
    private static final String KEEP_ALIVE = "etcdserverpb.Lease/LeaseKeepAlive";

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String prefix;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/keep-alives/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    /**
     * etcd's answers stop reaching the client (held back in a relay; the requests still reach etcd, and both ends
     * stay connected): every keep-alive sent from then on goes unanswered. jetcd ends a {@code keepAliveOnce}
     * stream only when an answer arrives, so each one given up on stayed open, one more per keep-alive period,
     * until the connection died (gRPC's own keep-alive, 40 s by jetcd's defaults).
     */
    @Test
    void keepAlivesGivenUpOnEndTheirStreamsWhileTheServerStaysSilent() throws Exception {
        Duration ttl = Duration.ofSeconds(3);
        URI endpoint = URI.create(EtcdServers.shared().endpoints().get(0));
        TcpRelay relay = TcpRelay.to(endpoint.getPort());
        opened.add(relay);
        KeepAliveCalls calls = new KeepAliveCalls();
        Client client = EtcdTesting.clientBuilder(List.of("http://127.0.0.1:" + relay.port()))
                .interceptor(calls)
                .build();
        opened.add(client);
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, new FencedLockListener() {});
        opened.add(registry);
        Lease lease = registry.lock("silent").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        long firstDeadline = hold.validUntilNanos();
        await().atMost(ttl).until(() -> hold.validUntilNanos() != firstDeadline); // a keep-alive was answered
        await().atMost(Duration.ofSeconds(2)).until(() -> calls.open.get() == 0); // and its stream ended
        int startedBefore = calls.started.get();

        relay.holdBack();

        await().atMost(ttl.multipliedBy(2)).until(() -> hold.loss() != null);
        assertThat(hold.loss()).isEqualTo(LeaseLoss.SESSION_LOST);
        assertThat(calls.started.get() - startedBefore)
                .as("keep-alives sent after the server went silent")
                .isGreaterThanOrEqualTo(2);
        // the last one sent may still be waited for, a keep-alive period (1 s) at most
        await().atMost(Duration.ofSeconds(2)).untilAsserted(() -> assertThat(calls.open.get())
                .as("keep-alive streams still open after their keep-alives were given up on")
                .isZero());
        relay.dropConnections(); // the release's revoke on a new connection, not waited out on the silent one
        lease.close();
    }

    /**
     * A keep-alive whose send throws (here a test hook throws where jetcd would): the periodic task that sends them
     * was never run again after that, so the etcd lease expired on the server while nothing here ended the lease or
     * told the listener; a check found it only once the deadline had passed. The failed send ends the lease at once.
     */
    @Test
    void aKeepAliveThatCannotBeSentEndsTheLeaseAndTellsTheListenerBeforeItsDeadline() throws Exception {
        Duration ttl = Duration.ofSeconds(3);
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        List<Boolean> deadlinePassedWhenTold = new CopyOnWriteArrayList<>();
        List<LeaseLoss> told = new CopyOnWriteArrayList<>();
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, new FencedLockListener() {
            @Override
            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                deadlinePassedWhenTold.add(EtcdLockRegistry.holdOf(lease).deadlinePassed());
                told.add(cause);
            }
        });
        opened.add(registry);
        Lease lease = registry.lock("unsendable").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        CountDownLatch thrown = new CountDownLatch(1);
        registry.keepAlives.sendsForTest(leaseId -> {
            thrown.countDown();
            throw new IllegalStateException("keep-alive refused by the test");
        });

        assertThat(thrown.await(ttl.toMillis(), TimeUnit.MILLISECONDS))
                .as("a keep-alive sent")
                .isTrue();

        // no check of the lease here: only the keep-alive thread can end it
        await().atMost(ttl.multipliedBy(2))
                .alias("the listener told of the lease whose keep-alive could not be sent")
                .until(() -> !told.isEmpty());
        assertThat(deadlinePassedWhenTold)
                .as("whether the keep-alive deadline had passed when the listener was told")
                .containsExactly(false);
        assertThat(told).containsExactly(LeaseLoss.SESSION_LOST);
        assertThat(lease.isValid()).isFalse();
        lease.close();
    }

    /** Counts the client's keep-alive calls: started, and open (started, not yet closed). */
    private static final class KeepAliveCalls implements ClientInterceptor {
        final AtomicInteger started = new AtomicInteger();
        final AtomicInteger open = new AtomicInteger();

        @Override
        public <Q, A> ClientCall<Q, A> interceptCall(MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            ClientCall<Q, A> call = next.newCall(method, options);
            if (!method.getFullMethodName().equals(KEEP_ALIVE)) {
                return call;
            }
            return new SimpleForwardingClientCall<>(call) {
                @Override
                public void start(Listener<A> listener, Metadata headers) {
                    started.incrementAndGet();
                    open.incrementAndGet();
                    super.start(
                            new SimpleForwardingClientCallListener<>(listener) {
                                @Override
                                public void onClose(Status status, Metadata trailers) {
                                    open.decrementAndGet();
                                    super.onClose(status, trailers);
                                }
                            },
                            headers);
                }
            };
        }
    }
}
