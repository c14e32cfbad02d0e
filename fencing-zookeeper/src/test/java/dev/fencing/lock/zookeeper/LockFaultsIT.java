package dev.fencing.lock.zookeeper;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;

/** Faults a single ZooKeeper server produces in production, each on a real embedded server. */
class LockFaultsIT {

    record Invalidation(long token, LeaseLoss cause) {}

    record Regression(String path, long previous, long current, String explanation) {}

    static final class RecordingListener implements FencedLockListener {
        final List<Invalidation> invalidations = new CopyOnWriteArrayList<>();
        final List<Regression> regressions = new CopyOnWriteArrayList<>();

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            invalidations.add(new Invalidation(lease.token(), cause));
        }

        @Override
        public void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {
            regressions.add(new Regression(lockPath, previousToken, newToken, explanation));
        }
    }

    @Test
    void sessionExpiredOnTheServerInvalidatesTheLeaseAndTheNextHolderGetsAGreaterToken() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            RecordingListener listener = new RecordingListener();
            CuratorFramework holderClient = clients.newClient(Duration.ofSeconds(10));
            FencedLocks holderLocks = clients.track(
                    FencedLocks.builder(holderClient).listener(listener).build());
            FencedLock next =
                    clients.locks(clients.newClient(Duration.ofSeconds(10))).lock("/it/expiry");

            Lease lease = holderLocks.lock("/it/expiry").acquire();
            assertThat(lease.isValid()).isTrue();
            ZooKeeper handle = holderClient.getZookeeperClient().getZooKeeper();
            ZooKeeperSessions.expire(zk.connectString(), handle.getSessionId(), handle.getSessionPasswd());

            await().atMost(Duration.ofSeconds(20)).until(() -> !lease.isValid());
            assertThat(lease.lossCause()).isIn(LeaseLoss.CONNECTION_SUSPENDED, LeaseLoss.SESSION_LOST);
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(listener.invalidations)
                    .extracting(Invalidation::token)
                    .containsExactly(lease.token()));
            assertThatThrownBy(lease::ensureValid)
                    .isInstanceOf(LeaseLostException.class)
                    .hasMessageContaining("/it/expiry")
                    .hasMessageContaining(Long.toString(lease.token()));
            try (Lease successor = next.tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
                assertThat(successor.token()).isGreaterThan(lease.token());
            }
            lease.close();
            lease.close();
        }
    }

    @Test
    void aRecursivelyDeletedParentIsRecreatedWithTokensAboveEveryEarlierGrantAndZxidTokensStillRise() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            RecordingListener listener = new RecordingListener();
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            FencedLocks locks =
                    clients.track(FencedLocks.builder(client).listener(listener).build());
            FencedLock sequence = locks.lock("/it/deleted/sequence");
            FencedLock zxid = locks.lock("/it/deleted/zxid", TokenSource.ZXID);
            long sequenceBefore = 0;
            long zxidBefore = 0;
            for (int i = 0; i < 5; i++) {
                sequenceBefore = sequence.runLocked(Lease::token);
                zxidBefore = zxid.runLocked(Lease::token);
            }
            assertThat(sequenceBefore).as("sequences 1 to 5, plus 1").isEqualTo(6);

            // a plain delete cannot remove the parent: its marker keeps it non-empty
            assertThatThrownBy(() -> client.delete().forPath("/it/deleted/sequence"))
                    .isInstanceOf(KeeperException.NotEmptyException.class);
            // an operator "cleans up" the lock parents recursively while nobody holds them
            client.delete().deletingChildrenIfNeeded().forPath("/it/deleted/sequence");
            client.delete().deletingChildrenIfNeeded().forPath("/it/deleted/zxid");

            long sequenceAfter = sequence.runLocked(Lease::token);
            long zxidAfter = zxid.runLocked(Lease::token);
            assertThat(sequenceAfter).isGreaterThan(sequenceBefore).isEqualTo((1L << 31) + 2);
            assertThat(sequence.runLocked(Lease::token)).isEqualTo(sequenceAfter + 1);
            assertThat(zxidAfter).isGreaterThan(zxidBefore);
            assertThat(listener.regressions).isEmpty();
        }
    }

    @Test
    void clientsRacingToRecreateADeletedParentAllGetTokensAboveEveryEarlierGrant() throws Exception {
        String path = "/it/deleted/raced";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework admin = clients.newClient(Duration.ofSeconds(10));
            FencedLock first = clients.locks(admin).lock(path);
            long before = 0;
            for (int i = 0; i < 5; i++) {
                before = first.runLocked(Lease::token);
            }
            admin.delete().deletingChildrenIfNeeded().forPath(path);
            List<FencedLock> racers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                racers.add(
                        clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path));
            }
            CountDownLatch start = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(racers.size());
            try {
                List<Future<Long>> grants = new ArrayList<>();
                for (FencedLock racer : racers) {
                    grants.add(pool.submit(() -> {
                        start.await();
                        return racer.runLocked(Lease::token);
                    }));
                }
                start.countDown();
                List<Long> tokens = new ArrayList<>();
                for (Future<Long> grant : grants) {
                    tokens.add(grant.get(60, TimeUnit.SECONDS));
                }

                long highestBefore = before;
                assertThat(tokens).doesNotHaveDuplicates().allSatisfy(token -> assertThat(token)
                        .isGreaterThan(highestBefore));
                assertThat(admin.getChildren().forPath(path))
                        .as("one incarnation, one marker")
                        .singleElement()
                        .satisfies(child -> assertThat(child).startsWith("fencing-base-"));
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void aParentMadeByAPlainCuratorLockIsRefusedNamingThePathAndHowToAdoptIt() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            InterProcessMutex plain = new InterProcessMutex(client, "/it/foreign");
            plain.acquire();
            plain.release();
            FencedLocks locks = clients.locks(client);

            assertThatThrownBy(() -> locks.lock("/it/foreign").acquire())
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining("/it/foreign")
                    .hasMessageContaining("fencing-base-")
                    .hasMessageContaining("fresh path");
            assertThat(client.getChildren().forPath("/it/foreign"))
                    .as("the refused grant released its node")
                    .isEmpty();
            // an operator who knows the history adopts the parent as the message says
            client.create()
                    .creatingParentsIfNeeded()
                    .forPath("/fencing-lock-history/it/foreign", "100".getBytes(US_ASCII));
            client.create().forPath("/it/foreign/fencing-base-100");
            assertThat(locks.lock("/it/foreign").runLocked(Lease::token)).isGreaterThan(100);
        }
    }

    /**
     * A plain Curator parent adopted the way the refusal says (history node first, then the marker)
     * keeps its tokens above every earlier one when an operator later deletes it, as docs/locks.md allows.
     * Adopted by its marker alone, the same deletion leaves no history, and the next grant gets token
     * 2 again, below the adopted parent's tokens.
     */
    @Test
    void aForeignParentAdoptedAsTheRefusalSaysStaysAboveItsTokensAfterALaterDeletion() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            FencedLocks locks = clients.locks(client);
            long[] adopted = new long[2];
            String[] paths = {"/it/adopted/marker-only", "/it/adopted/as-told"};
            for (int i = 0; i < paths.length; i++) {
                String path = paths[i];
                InterProcessMutex plain = new InterProcessMutex(client, path);
                for (int grant = 0; grant < 20; grant++) { // an earlier fencing-zookeeper's tokens: up to 20
                    plain.acquire();
                    plain.release();
                }
                client.create().forPath(path + "/keeper"); // keeps the plain CONTAINER parent alive
                Throwable refusal = catchThrowable(() -> locks.lock(path).acquire());
                assertThat(refusal)
                        .isInstanceOf(ForeignLockParentException.class)
                        .hasMessageContaining("create /fencing-lock-history" + path + " N")
                        .hasMessageContaining("create " + path + "/fencing-base-N");
                if (path.endsWith("as-told")) {
                    client.create()
                            .creatingParentsIfNeeded()
                            .forPath("/fencing-lock-history" + path, "20".getBytes(US_ASCII));
                }
                client.create().forPath(path + "/fencing-base-20");
                adopted[i] = locks.lock(path).runLocked(Lease::token);
                assertThat(adopted[i]).isGreaterThan(20);

                client.delete().deletingChildrenIfNeeded().forPath(path); // unused: docs/locks.md allows it
            }

            assertThat(locks.lock(paths[0]).runLocked(Lease::token))
                    .as("adopted by its marker alone: no history, tokens restart")
                    .isEqualTo(2);
            assertThat(locks.lock(paths[1]).runLocked(Lease::token)).isGreaterThan(adopted[1]);
        }
    }

    @Test
    void tokensKeepRisingWhenTheServerRestartsOnItsData() {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
            FencedLock sequence = locks.lock("/it/restart/sequence");
            FencedLock zxid = locks.lock("/it/restart/zxid", TokenSource.ZXID);
            long sequenceBefore = 0;
            long zxidBefore = 0;
            for (int i = 0; i < 3; i++) {
                sequenceBefore = sequence.runLocked(Lease::token);
                zxidBefore = zxid.runLocked(Lease::token);
            }

            zk.stop();
            zk.restart();

            long sequenceAfter = await().atMost(Duration.ofSeconds(30))
                    .ignoreExceptions()
                    .until(() -> sequence.runLocked(Lease::token), t -> t > 0);
            long zxidAfter = zxid.runLocked(Lease::token);
            assertThat(sequenceAfter).isGreaterThan(sequenceBefore);
            assertThat(zxidAfter).isGreaterThan(zxidBefore);
        }
    }

    @Test
    void sequenceTokensKeepRisingAcrossContainerReaperRuns() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder()
                        .containerCheckInterval(Duration.ofMillis(100))
                        .build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            FencedLock fenced = clients.locks(client).lock("/it/reaper/fenced");
            long first = fenced.runLocked(Lease::token);

            // plain Curator makes its parent a CONTAINER; watching it vanish proves the reaper ran since
            for (int pass = 0; pass < 2; pass++) {
                InterProcessMutex plain = new InterProcessMutex(client, "/it/reaper/plain");
                plain.acquire();
                plain.release();
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> client.checkExists().forPath("/it/reaper/plain") == null);
            }

            assertThat(client.checkExists().forPath("/it/reaper/fenced")).isNotNull();
            assertThat(fenced.runLocked(Lease::token)).isGreaterThan(first);

            // a ZXID lock's parent is a CONTAINER: reaped when unused, which its tokens do not mind
            FencedLock byZxid = clients.locks(client).lock("/it/reaper/zxid", TokenSource.ZXID);
            long zxidFirst = byZxid.runLocked(Lease::token);
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> client.checkExists().forPath("/it/reaper/zxid") == null);
            assertThat(byZxid.runLocked(Lease::token)).isGreaterThan(zxidFirst);
        }
    }

    /**
     * {@code /fencing-lock-history} is shared by every application on the ensemble, whichever created it
     * first: a second application with credentials of its own must still be able to record its locks'
     * histories there, and neither can delete the other's.
     */
    @Test
    void twoApplicationsWithTheirOwnCredentialsBothKeepHistoriesThatTheOtherCannotDelete() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            ZooKeeperDigest orders = ZooKeeperDigest.of("orders", "s3cret");
            ZooKeeperDigest billing = ZooKeeperDigest.of("billing", "other");
            CuratorFramework ordersClient = clients.newClient(Duration.ofSeconds(10), orders.authInfo());
            CuratorFramework billingClient = clients.newClient(Duration.ofSeconds(10), billing.authInfo());
            FencedLocks ordersLocks = clients.track(
                    FencedLocks.builder(ordersClient).acl(orders.acl()).build());
            FencedLocks billingLocks = clients.track(
                    FencedLocks.builder(billingClient).acl(billing.acl()).build());

            assertThat(ordersLocks.lock("/orders").runLocked(Lease::token)).isEqualTo(2);
            assertThat(billingLocks.lock("/billing").runLocked(Lease::token)).isEqualTo(2);

            assertThatThrownBy(() -> billingClient.delete().forPath("/fencing-lock-history/orders"))
                    .isInstanceOf(KeeperException.NoAuthException.class);
            assertThatThrownBy(() -> ordersClient.delete().forPath("/fencing-lock-history/billing"))
                    .isInstanceOf(KeeperException.NoAuthException.class);
        }
    }

    @Test
    void aClientWithoutCredentialsCannotDeleteOrCreateLockNodes() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            ZooKeeperDigest digest = ZooKeeperDigest.of("orders", "s3cret");
            CuratorFramework owner = clients.newClient(Duration.ofSeconds(10), digest.authInfo());
            FencedLocks locks =
                    clients.track(FencedLocks.builder(owner).acl(digest.acl()).build());
            CuratorFramework stranger = clients.newClient(Duration.ofSeconds(10));

            try (Lease lease = locks.lock("/it/acl/orders").acquire()) {
                String node = "/it/acl/orders/"
                        + owner.getChildren().forPath("/it/acl/orders").stream()
                                .filter(child -> child.contains("lock-"))
                                .findFirst()
                                .orElseThrow();

                assertThatThrownBy(() -> stranger.delete().forPath(node))
                        .isInstanceOf(KeeperException.NoAuthException.class);
                assertThatThrownBy(() -> stranger.create().forPath("/it/acl/orders/intruder"))
                        .isInstanceOf(KeeperException.NoAuthException.class);
                assertThatThrownBy(() -> stranger.delete().forPath("/it/acl/orders/fencing-base-0"))
                        .isInstanceOf(KeeperException.NoAuthException.class);
                assertThatThrownBy(() -> stranger.delete().forPath("/fencing-lock-history/it/acl/orders"))
                        .isInstanceOf(KeeperException.NoAuthException.class);
                FencedLock strangerLock = clients.locks(stranger).lock("/it/acl/orders");
                assertThatThrownBy(() -> strangerLock.tryAcquire(Duration.ofSeconds(2)))
                        .isInstanceOf(LockAcquisitionException.class)
                        .hasMessageContaining("/it/acl/orders");
                assertThat(lease.verify()).isTrue();
            }
            // the same delete succeeds for a lock created without an ACL: the ACL is what stopped it
            FencedLock open = clients.locks(owner).lock("/it/acl/open");
            try (Lease lease = open.acquire()) {
                String node = "/it/acl/open/"
                        + owner.getChildren().forPath("/it/acl/open").stream()
                                .filter(child -> child.contains("lock-"))
                                .findFirst()
                                .orElseThrow();
                stranger.delete().forPath(node);
                assertThat(lease.verify()).isFalse();
            }
        }
    }
}
