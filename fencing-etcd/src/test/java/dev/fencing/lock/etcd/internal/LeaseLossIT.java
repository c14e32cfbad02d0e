package dev.fencing.lock.etcd.internal;

import static dev.fencing.lock.etcd.internal.EtcdTesting.keysUnder;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.testsupport.EmbeddedEtcdCluster;
import dev.fencing.testsupport.EtcdMember;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A lease reads invalid once its etcd lease or key is gone, or once its keep-alives have gone unanswered for a
 * TTL: each loss made real on etcd (a revoke or delete by another client, a stopped member), and the next holder
 * shown to get a greater token.
 */
class LeaseLossIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    /** Well below the keep-alive period (a third of the TTL): only the watch on the key can tell this fast. */
    private static final Duration TOLD_WITHIN = Duration.ofMillis(1_200);

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService successor = Executors.newSingleThreadExecutor();
    private String prefix;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/loss/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        successor.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private Client client(List<String> endpoints) {
        Client client = EtcdTesting.client(endpoints);
        opened.add(client);
        return client;
    }

    private Client client() {
        return client(EtcdServers.shared().endpoints());
    }

    private EtcdLockRegistry registry(Client client, Duration ttl, FencedLockListener listener) {
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, listener);
        opened.add(registry);
        return registry;
    }

    @Test
    void aLeaseRevokedByAnotherClientReadsInvalidSoonAndTheNextHolderGetsAGreaterToken() throws Exception {
        RecordingListener told = new RecordingListener();
        Lease lease = registry(client(), TTL, told).lock("revoked").acquire();
        FencedLock next = registry(client(), TTL, new FencedLockListener() {}).lock("revoked");
        Future<Lease> taken = successor.submit(() -> next.acquire());
        Client outsider = client();
        KeyValue key = keysUnder(outsider, prefix).get(0);

        outsider.getLeaseClient().revoke(EtcdLockIT.leaseIdOf(key)).get(10, TimeUnit.SECONDS);

        Lease nextLease = taken.get(10, TimeUnit.SECONDS);
        assertThat(nextLease.token()).isGreaterThan(lease.token());
        await().atMost(TOLD_WITHIN).until(() -> !lease.isValid());
        assertThat(lease.lossCause()).isIn(LeaseLoss.NODE_GONE, LeaseLoss.SESSION_LOST);
        await().atMost(TOLD_WITHIN).until(() -> told.causes.contains(lease.lossCause()));
        lease.close();
        successor.submit(nextLease::close).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aLeaseWhoseKeyAnotherClientDeletedReadsInvalidSoonAndTheNextHolderGetsAGreaterToken() throws Exception {
        Lease lease = registry(client(), TTL, new FencedLockListener() {})
                .lock("deleted")
                .acquire();
        FencedLock next = registry(client(), TTL, new FencedLockListener() {}).lock("deleted");
        Future<Lease> taken = successor.submit(() -> next.acquire());
        Client outsider = client();
        KeyValue key = keysUnder(outsider, prefix).get(0);

        EtcdLockIT.delete(outsider, key);

        Lease nextLease = taken.get(10, TimeUnit.SECONDS);
        assertThat(nextLease.token()).isGreaterThan(lease.token());
        // the etcd lease itself lives on and its keep-alives are answered: only the watch on the key can tell
        await().atMost(TOLD_WITHIN).until(() -> !lease.isValid());
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
        successor.submit(nextLease::close).get(10, TimeUnit.SECONDS);
    }

    /**
     * The key is deleted, and the watch has told the hold, exactly between the check's read of the pause
     * detector's tick and its read of the hold's mark: the check must read the mark after the tick.
     */
    @Test
    void aCheckReadsTheMarkAfterTheTickSoALossBetweenTheTwoReadsAnswersInvalid() throws Exception {
        EtcdLockRegistry registry = registry(client(), TTL, new FencedLockListener() {});
        Lease lease = registry.lock("between").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        Client outsider = client();
        KeyValue key = keysUnder(outsider, prefix).get(0);
        AtomicBoolean once = new AtomicBoolean();
        registry.betweenValidityReads(() -> {
            if (once.compareAndSet(false, true)) {
                try {
                    EtcdLockIT.delete(outsider, key);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
                await().atMost(Duration.ofSeconds(10)).until(() -> hold.loss() != null);
            }
        });

        boolean valid = lease.isValid();

        assertThat(once).isTrue();
        assertThat(valid)
                .as("a check during which the key was deleted and the hold marked")
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
    }

    /**
     * The only member stops: no keep-alive is answered any more. The lease must read invalid once a TTL (less the
     * margin) has passed since the send time of the last answered keep-alive, though nothing tells the client
     * (jetcd only fails to connect), and valid until then.
     */
    @Test
    void unansweredKeepAlivesMakeTheLeaseInvalidNoLaterThanATtlAfterTheLastAnsweredOne() throws Exception {
        Duration ttl = Duration.ofSeconds(3);
        try (EmbeddedEtcdCluster etcd = EtcdServers.startCluster(1)) {
            EtcdMember member = etcd.members().get(0);
            EtcdLockRegistry registry = registry(client(etcd.endpoints()), ttl, new FencedLockListener() {});
            Lease lease = registry.lock("silent").acquire();
            EtcdHold hold = EtcdLockRegistry.holdOf(lease);
            long firstDeadline = hold.validUntilNanos();
            await().atMost(ttl).until(() -> hold.validUntilNanos() != firstDeadline); // a keep-alive was answered

            member.stop();
            long deadline = hold.validUntilNanos(); // no answer can arrive any more
            long lastAnsweredSentAt = deadline - ttl.toNanos() + ttl.toNanos() / EtcdLockRegistry.MARGIN_DIVISOR;
            boolean validBefore = lease.isValid();
            while (System.nanoTime() - deadline <= 0) {
                Thread.sleep(5);
            }
            long checkedAt = System.nanoTime();
            boolean validAfter = lease.isValid();

            assertThat(checkedAt - lastAnsweredSentAt).isLessThanOrEqualTo(ttl.toNanos());
            assertThat(validBefore).as("before the deadline").isTrue();
            assertThat(validAfter)
                    .as("a TTL less the margin after the last answered keep-alive")
                    .isFalse();
            assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);

            member.start();
            Lease next = successor
                    .submit(() -> {
                        Lease taken = registry(client(etcd.endpoints()), ttl, new FencedLockListener() {})
                                .lock("silent")
                                .acquire();
                        taken.close();
                        return taken;
                    })
                    .get(30, TimeUnit.SECONDS);
            assertThat(next.token()).isGreaterThan(lease.token());
            lease.close();
        }
    }

    static final class RecordingListener implements FencedLockListener {
        final List<LeaseLoss> causes = new CopyOnWriteArrayList<>();

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            causes.add(cause);
        }
    }
}
