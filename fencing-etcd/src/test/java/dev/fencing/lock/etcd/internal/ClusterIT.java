package dev.fencing.lock.etcd.internal;

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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A 3-member cluster: a leader killed while a lock is held and waited for; a quorum lost under a holder. */
class ClusterIT {
    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration ELECTION = Duration.ofSeconds(15);

    private final List<AutoCloseable> opened = new ArrayList<>();
    /** One thread: a lease is closed by the thread that acquired it. */
    private final ExecutorService threads = Executors.newSingleThreadExecutor();

    @AfterEach
    void stop() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private EtcdLockRegistry registry(EmbeddedEtcdCluster cluster, String prefix) {
        return registry(cluster, prefix, TTL);
    }

    private EtcdLockRegistry registry(EmbeddedEtcdCluster cluster, String prefix, Duration ttl) {
        Client client = EtcdTesting.client(cluster.endpoints());
        opened.add(client);
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, new FencedLockListener() {});
        opened.add(registry);
        return registry;
    }

    @Test
    void aLeaderKilledWhileTheLockIsHeldAndAwaitedKeepsTheHolderAloneAndTheNextTokenGreater() throws Exception {
        try (EmbeddedEtcdCluster cluster = EtcdServers.startCluster(3)) {
            // a TTL that outlasts an election and jetcd's failover, so that the holder keeps its lease
            FencedLock mine =
                    registry(cluster, "it/cluster/kill", Duration.ofSeconds(6)).lock("ledger");
            FencedLock theirs =
                    registry(cluster, "it/cluster/kill", Duration.ofSeconds(6)).lock("ledger");
            Lease held = mine.acquire();
            Future<Lease> waiter = threads.submit(() -> theirs.acquire());

            EtcdMember leader = cluster.awaitLeader(ELECTION);
            leader.kill();
            cluster.awaitLeader(ELECTION);
            // the new leader keeps the lease (it renews every lease on election): keep-alives go on
            EtcdHold hold = EtcdLockRegistry.holdOf(held);
            long deadline = hold.validUntilNanos();
            await().atMost(ELECTION)
                    .until(() -> hold.validUntilNanos() != deadline && hold.validUntilNanos() - System.nanoTime() > 0);

            assertThat(held.isValid()).isTrue();
            assertThat(waiter.isDone()).as("granted beside a valid holder").isFalse();
            held.close();
            Lease next = waiter.get(30, TimeUnit.SECONDS);
            assertThat(next.token()).isGreaterThan(held.token());
            assertThat(next.isValid()).isTrue();
            threads.submit(next::close).get(10, TimeUnit.SECONDS);
            leader.start();
        }
    }

    @Test
    void aQuorumLostUnderAHolderMakesItsLeaseInvalidNoLaterThanATtlAfterTheLastAnsweredKeepAlive() throws Exception {
        try (EmbeddedEtcdCluster cluster = EtcdServers.startCluster(3)) {
            Lease lease = registry(cluster, "it/cluster/quorum").lock("ledger").acquire();
            EtcdHold hold = EtcdLockRegistry.holdOf(lease);
            long firstDeadline = hold.validUntilNanos();
            await().atMost(TTL).until(() -> hold.validUntilNanos() != firstDeadline);
            // The leader first: a leader left alone keeps answering keep-alives until it notices, an election
            // timeout later, that it lost its quorum; a follower left alone has no leader to forward them to.
            EtcdMember leader = cluster.awaitLeader(ELECTION);
            leader.kill();
            cluster.members().stream()
                    .filter(member -> member != leader)
                    .findFirst()
                    .orElseThrow()
                    .kill();

            long deadline = hold.validUntilNanos();
            long lastAnsweredSentAt = deadline - TTL.toNanos() + TTL.toNanos() / EtcdLockRegistry.MARGIN_DIVISOR;
            while (System.nanoTime() - deadline <= 0) {
                Thread.sleep(5);
            }
            long checkedAt = System.nanoTime();
            boolean validAfter = lease.isValid();

            assertThat(checkedAt - lastAnsweredSentAt).isLessThanOrEqualTo(TTL.toNanos());
            assertThat(validAfter)
                    .as("a TTL less the margin after the last answered keep-alive")
                    .isFalse();
            assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
            lease.close();
        }
    }
}
