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
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
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
            // a TTL that outlasts an election and jetcd's failover, so that the holder keeps its lease: with 6 s a
            // slow machine's election could take the lease, and the test then proved nothing about the handover
            // (it costs no time: the test waits for a keep-alive answered after the election, a third of the TTL)
            FencedLock mine = registry(cluster, "it/cluster/kill", ELECTION).lock("ledger");
            FencedLock theirs = registry(cluster, "it/cluster/kill", ELECTION).lock("ledger");
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

    /**
     * What breaks the token's monotonicity: a member whose data is wiped starts a new cluster at revision 1, as a
     * restore from an old snapshot rewinds it. The next grant's token is lower, and the listener is told.
     */
    @Test
    void aClusterStartedAfreshUnderTheClientGivesALowerTokenAndTheListenerIsTold() throws Exception {
        List<String> told = new CopyOnWriteArrayList<>();
        try (EmbeddedEtcdCluster cluster = EtcdServers.startCluster(1)) {
            Client client = EtcdTesting.client(cluster.endpoints());
            opened.add(client);
            EtcdLockRegistry registry = EtcdTesting.registry(client, "it/cluster/fresh", TTL, new FencedLockListener() {
                @Override
                public void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {
                    told.add(lockPath + " " + previousToken + " -> " + newToken + ": " + explanation);
                }
            });
            opened.add(registry);
            for (int i = 0; i < 30; i++) {
                client.getKVClient()
                        .put(EtcdTesting.bytes("it/noise"), EtcdTesting.bytes("v" + i))
                        .get(10, TimeUnit.SECONDS);
            }
            Lease before = registry.lock("ledger").acquire();
            before.close();
            EtcdMember member = cluster.members().get(0);

            member.stop();
            deleteTree(member.dataDirectory());
            member.start();

            Lease after = await().atMost(ELECTION)
                    .pollInSameThread() // a lease is closed by the thread that acquired it
                    .ignoreExceptions()
                    .until(() -> registry.lock("ledger").tryAcquire(Duration.ofSeconds(5)), Optional::isPresent)
                    .orElseThrow();
            after.close();
            assertThat(after.token()).isLessThan(before.token());
            assertThat(told)
                    .singleElement()
                    .asString()
                    .contains("went backwards")
                    .contains("snapshot");
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
