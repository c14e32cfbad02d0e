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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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

    /**
     * A listener that tells the worker to stop and waits until it has (what the listener's javadoc asks for), and a
     * loss that the worker's own {@code isValid()} finds: the keep-alive deadline passed. Told on the worker's
     * thread, the listener waited for that very thread and {@code isValid()} never returned. The keep-alives' one
     * thread is held inside a send (a test hook), so that no keep-alive answers and the keep-alive thread cannot
     * find the deadline passed first; the pause tolerance is far above the TTL (the registry takes it, the builder
     * would not), so that a stall of this machine is not taken for a pause first either.
     */
    @Test
    void aListenerThatWaitsForTheWorkerToStopDoesNotHoldUpTheWorkersCheck() throws Exception {
        Duration ttl = Duration.ofSeconds(2);
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        CountDownLatch workerStopped = new CountDownLatch(1);
        opened.add(workerStopped::countDown);
        List<String> toldOn = new CopyOnWriteArrayList<>();
        EtcdLockRegistry registry =
                EtcdTesting.registry(client, prefix, ttl, Duration.ofMinutes(10), new FencedLockListener() {
                    @Override
                    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                        toldOn.add(cause + " on " + Thread.currentThread().getName());
                        try {
                            workerStopped.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                });
        opened.add(registry);
        CountDownLatch sendHeld = holdKeepAlivesInASend(registry);
        ExecutorService workers = Executors.newSingleThreadExecutor(task -> new Thread(task, "worker"));
        opened.add(workers::shutdownNow);

        Future<LeaseLoss> worker = workers.submit(() -> {
            try (Lease lease = registry.lock("checked").acquire()) {
                assertThat(sendHeld.await(ttl.toMillis() * 2, TimeUnit.MILLISECONDS))
                        .as("the keep-alive thread held in a send")
                        .isTrue();
                // on this thread: the worker's own check is the one that finds the loss
                await().pollInSameThread()
                        .atMost(ttl.multipliedBy(3))
                        .pollInterval(Duration.ofMillis(5))
                        .until(() -> !lease.isValid());
                workerStopped.countDown();
                return lease.lossCause();
            }
        });

        assertThat(worker.get(ttl.toMillis() * 5, TimeUnit.MILLISECONDS))
                .as("what the worker's check found")
                .isEqualTo(LeaseLoss.SESSION_LOST);
        await().atMost(Duration.ofSeconds(10)).until(() -> toldOn.size() == 1);
        assertThat(toldOn).containsExactly("SESSION_LOST on fenced-lock-listener");
    }

    /**
     * A loss the holder's own check found is told on the listener's thread, and the holder may close its lease before
     * that thread gets to it: it must be told all the same (whether a hold is one the listener hears of is decided
     * when it is marked, not when it is told). The listener's thread is held on another lease's loss (its key deleted
     * by another client) until the worker has closed its own; the keep-alives' thread is held in a send, as above.
     */
    @Test
    void aLossTheHoldersCheckFoundIsToldAlthoughTheHolderClosedItsLeaseFirst() throws Exception {
        Duration ttl = Duration.ofSeconds(2);
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        Client outsider = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(outsider);
        CountDownLatch workerClosed = new CountDownLatch(1);
        opened.add(workerClosed::countDown);
        List<String> told = new CopyOnWriteArrayList<>();
        EtcdLockRegistry registry =
                EtcdTesting.registry(client, prefix, ttl, Duration.ofMinutes(10), new FencedLockListener() {
                    @Override
                    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                        told.add(cause.toString());
                        if (cause == LeaseLoss.NODE_GONE) {
                            try {
                                workerClosed.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }
                });
        opened.add(registry);
        CountDownLatch sendHeld = holdKeepAlivesInASend(registry);
        Lease other = registry.lock("other").acquire();
        outsider.getKVClient().delete(EtcdLockRegistry.holdOf(other).keyBytes).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(10))
                .alias("the listener's thread told of the other lease, and held there")
                .until(() -> told.contains("NODE_GONE"));

        Lease lease = registry.lock("checked").acquire();
        assertThat(sendHeld.await(ttl.toMillis() * 2, TimeUnit.MILLISECONDS))
                .as("the keep-alive thread held in a send")
                .isTrue();
        await().pollInSameThread()
                .atMost(ttl.multipliedBy(3))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> !lease.isValid());
        lease.close();
        workerClosed.countDown();

        await().atMost(Duration.ofSeconds(10))
                .alias("the listener told of the loss the holder's check found")
                .until(() -> told.size() == 2);
        assertThat(told).containsExactly("NODE_GONE", "SESSION_LOST");
        other.close();
    }

    /**
     * A waiter whose keep-alives went unanswered for a while (its deadline a few seconds away) sends one keep-alive
     * before it is granted, and here etcd does not answer it (a member that went silent). Every request to etcd is
     * waited for at most the request timeout (30 s at most), so that a long TTL does not hold an acquire up; this one
     * was waited for a keep-alive period, a third of the TTL: 20 minutes with a TTL of an hour.
     */
    @Test
    void aRenewalBeforeALateGrantIsWaitedForAtMostTheRequestTimeoutNotAThirdOfTheTtl() throws Exception {
        Duration ttl = Duration.ofHours(1);
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, new FencedLockListener() {});
        opened.add(registry);
        ExecutorService waiterThread = Executors.newSingleThreadExecutor();
        opened.add(waiterThread::shutdownNow);
        CountDownLatch queued = new CountDownLatch(1);
        registry.predecessorWatched((waiter, predecessor) -> queued.countDown());
        AtomicInteger renewals = new AtomicInteger();
        registry.keys.renewalsForTest(leaseId -> {
            renewals.incrementAndGet();
            return new CompletableFuture<>(); // never answered
        });
        Lease holder = registry.lock("late").acquire();
        Future<Boolean> waiter = waiterThread.submit(() -> {
            try (Lease lease = registry.lock("late").acquire()) {
                return lease.isValid();
            }
        });
        assertThat(queued.await(10, TimeUnit.SECONDS)).isTrue();
        EtcdHold waiting = registry.holdsForTest().stream()
                .filter(hold -> hold != EtcdLockRegistry.holdOf(holder))
                .findFirst()
                .orElseThrow();
        // its last answered keep-alive was sent a TTL less 2 % less 5 s ago: its deadline is 5 s away
        long ago = TimeUnit.SECONDS.toNanos(ttl.getSeconds() - ttl.getSeconds() / 50 - 5);
        waiting.firstDeadline(
                System.nanoTime() - ago, System.currentTimeMillis() - TimeUnit.NANOSECONDS.toMillis(ago), 3600);
        assertThat(waiting.deadlinePassed()).isFalse();

        holder.close();

        assertThat(waiter.get(EtcdLockRegistry.MAX_REQUEST_TIMEOUT.getSeconds() + 20, TimeUnit.SECONDS))
                .as("the lease of a grant whose renewal went unanswered past its deadline")
                .isFalse();
        assertThat(renewals.get()).isEqualTo(1);
    }

    /**
     * Holds the registry's one keep-alive thread inside its first send until the test ends: no keep-alive is
     * answered, and that thread cannot find a deadline passed. Counted down once the thread is held.
     */
    private CountDownLatch holdKeepAlivesInASend(EtcdLockRegistry registry) {
        CountDownLatch sendHeld = new CountDownLatch(1);
        CountDownLatch releaseSend = new CountDownLatch(1);
        opened.add(releaseSend::countDown);
        registry.keepAlives.sendsForTest(leaseId -> {
            sendHeld.countDown();
            try {
                releaseSend.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new CompletableFuture<>();
        });
        return sendHeld;
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
