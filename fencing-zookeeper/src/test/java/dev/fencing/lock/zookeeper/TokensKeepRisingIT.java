package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.internal.LockParents;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.Test;

/**
 * SEQUENCE tokens keep rising where an adversarial review of the marker-and-history design found they
 * did not: mixed client versions, a switch of token source, and one parent seen through two namespaces.
 */
class TokensKeepRisingIT {

    /**
     * A not-yet-upgraded client on a parent made by the new version (here a fresh path) computes
     * sequence + 1 (the earlier fencing-zookeeper, and DeletedLockParentIT's "plain" model of it). An upgraded
     * client waiting right behind it must get a higher token: with a formula of base + sequence both got
     * 3, and MONOTONIC resources ({@code last_fence_token <= :token}) then accept the frozen first
     * holder's late write. Token = base + sequence + 1 is the only formula that stays above the earlier
     * one in both orders.
     */
    @Test
    void anUpgradedHolderBehindAnEarlierVersionHolderGetsAHigherToken() throws Exception {
        String path = "/review/mixed/sku-1";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework upgraded = clients.newClient(Duration.ofSeconds(10));
            FencedLock newLock = clients.locks(upgraded).lock(path);
            newLock.runLocked(Lease::token); // the new version makes the parent with its marker

            CuratorFramework oldClient = clients.newClient(Duration.ofSeconds(10));
            InterProcessMutex old = new InterProcessMutex(oldClient, path);
            old.acquire();
            String oldNode = old.getParticipantNodes().iterator().next();
            long oldToken = Long.parseLong(oldNode.substring(oldNode.lastIndexOf("lock-") + 5)) + 1;

            CountDownLatch granted = new CountDownLatch(1);
            long[] newToken = new long[1];
            Thread waiter = new Thread(() -> {
                try (Lease lease = newLock.acquire()) {
                    newToken[0] = lease.token();
                    granted.countDown();
                }
            });
            waiter.start();
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> upgraded.getChildren().forPath(path).stream()
                                    .filter(c -> c.contains("lock-"))
                                    .count()
                            == 2);
            old.release(); // stands for: old holder frozen, its session expires, its node goes
            granted.await();
            waiter.join();
            assertThat(newToken[0])
                    .as("earlier-version holder's token %d: the next holder's token must be above it", oldToken)
                    .isGreaterThan(oldToken);
        }
    }

    /**
     * Token-source switch: a ZXID holder's token is a zxid, far above any SEQUENCE token granted after
     * it on the same parent, so a ZXID grant on a SEQUENCE parent (with its marker) would let the ZXID
     * holder's late write beat the next SEQUENCE holder's. The review measured ZXID token 13, next
     * SEQUENCE token 3. A ZXID lock therefore refuses a parent with a marker, in the same process once
     * the path is unused and in another one.
     */
    @Test
    void aZxidLockRefusesASequenceParentSoNoLaterSequenceGrantGoesBelowIt() throws Exception {
        String path = "/review/sources/sku-1";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
            FencedLock sequence = locks.lock(path);
            long first = sequence.runLocked(Lease::token); // parent with marker
            FencedLock sameProcess = locks.lock(path, TokenSource.ZXID);
            FencedLock otherProcess =
                    clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path, TokenSource.ZXID);
            for (FencedLock zxid : List.of(sameProcess, otherProcess)) {
                assertThatThrownBy(() -> zxid.runLocked(Lease::token))
                        .isInstanceOf(ForeignLockParentException.class)
                        .hasMessageContaining(path)
                        .hasMessageContaining("fencing-base-0")
                        .hasMessageContaining("TokenSource.SEQUENCE");
            }
            long next = sequence.runLocked(Lease::token);
            assertThat(next)
                    .as("a later grant on the same lock path must beat an earlier one")
                    .isGreaterThan(first);
        }
    }

    /**
     * The other order in time: a ZXID lock's CONTAINER parent goes (reaped once unused, or deleted), and
     * a SEQUENCE lock then makes a fresh parent on the same path. Its tokens must not start below the
     * zxid tokens granted before, and a ZXID lock must not follow a SEQUENCE lock whose re-created
     * parents' bases may lie above the zxids: the history records the path's token source.
     */
    @Test
    void aPathKeepsTheTokenSourceItWasFirstUsedWithAcrossDeletionsOfItsParent() throws Exception {
        String zxidPath = "/review/sources/zxid-first";
        String sequencePath = "/review/sources/sequence-first";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            FencedLocks locks = clients.locks(client);
            long zxidToken = locks.lock(zxidPath, TokenSource.ZXID).runLocked(Lease::token);
            locks.lock(sequencePath).runLocked(Lease::token);
            client.delete().deletingChildrenIfNeeded().forPath(zxidPath);
            client.delete().deletingChildrenIfNeeded().forPath(sequencePath);

            assertThatThrownBy(() -> locks.lock(zxidPath).runLocked(Lease::token))
                    .as("a SEQUENCE grant after zxid token %d", zxidToken)
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining(zxidPath)
                    .hasMessageContaining("ZXID");
            assertThatThrownBy(() -> locks.lock(sequencePath, TokenSource.ZXID).runLocked(Lease::token))
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining(sequencePath)
                    .hasMessageContaining("SEQUENCE");
            assertThat(locks.lock(zxidPath, TokenSource.ZXID).runLocked(Lease::token))
                    .isGreaterThan(zxidToken);
            assertThat(locks.lock(sequencePath).runLocked(Lease::token)).isGreaterThan(LockParents.INCARNATION_SPAN);
        }
    }

    /**
     * A ZXID lock that finds its parent already there, without a marker (the CONTAINER a plain Curator
     * {@code InterProcessMutex} leaves, a node made by hand), records the path's history before its
     * grant too, not only when it creates the parent: once that parent is reaped or deleted, a SEQUENCE
     * lock on the path must not start at token 2, far below the zxid token of a holder that may be
     * frozen. The review measured zxid token 4294967299, then SEQUENCE token 2. Without the history
     * (deleted here by hand) the SEQUENCE lock does start at 2.
     */
    @Test
    void aZxidLockOnAParentItFoundWithoutAMarkerKeepsASequenceLockOffThePathOnceTheParentIsGone() throws Exception {
        String path = "/review/foreign-parent/sku-7";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            // given the parent a plain Curator lock leaves
            client.create()
                    .creatingParentsIfNeeded()
                    .withMode(CreateMode.CONTAINER)
                    .forPath(path);

            // when a ZXID lock is granted under it, and the parent goes once empty
            long zxidToken = clients.locks(client).lock(path, TokenSource.ZXID).runLocked(Lease::token);
            client.delete().forPath(path);

            // then a SEQUENCE lock refuses the path, in this process and in a fresh one
            assertThatThrownBy(() -> clients.locks(clients.newClient(Duration.ofSeconds(10)))
                            .lock(path)
                            .runLocked(Lease::token))
                    .as("a SEQUENCE grant after zxid token %d", zxidToken)
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining("ZXID");
            assertThat(client.getData().forPath(LockParents.historyOf(path)))
                    .asString()
                    .isEqualTo(LockParents.ZXID_HISTORY);
            client.delete().forPath(LockParents.historyOf(path));
            assertThat(clients.locks(client).lock(path).runLocked(Lease::token))
                    .as("without the history")
                    .isEqualTo(2)
                    .isLessThan(zxidToken);
        }
    }

    /**
     * A SEQUENCE parent whose marker was deleted by hand is no longer recognisable by its children, but
     * its history still names its base: a ZXID lock refuses it, since a re-created SEQUENCE parent's
     * base (2^31 above the last) may lie above the zxids, and ZXID tokens after it would go backwards.
     */
    @Test
    void aZxidLockRefusesAParentWithoutAMarkerWhoseHistoryNamesASequenceBase() throws Exception {
        String path = "/review/lost-marker/sku-1";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            clients.locks(client).lock(path).runLocked(Lease::token);
            client.delete().forPath(path + "/" + LockParents.marker(0));

            assertThatThrownBy(() ->
                            clients.locks(client).lock(path, TokenSource.ZXID).runLocked(Lease::token))
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining("SEQUENCE");
            assertThat(client.getChildren().forPath(path))
                    .as("the refused grant's lock node is released")
                    .isEmpty();
        }
    }

    /**
     * Two clients that name the same absolute parent through different Curator namespaces share one
     * history, keyed by the absolute path: a recreation by either starts above every earlier grant.
     * With the history keyed relative to the namespace, the review measured 9 before, 1 after.
     */
    @Test
    void aParentSeenThroughTwoNamespacesKeepsOneHistory() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework root = clients.newClient(Duration.ofSeconds(10));
            FencedLock viaRoot = clients.locks(root).lock("/shop/locks/sku-1");
            FencedLock viaNamespace = clients.locks(root.usingNamespace("shop")).lock("/locks/sku-1");
            long last = 0;
            for (int i = 0; i < 9; i++) {
                last = viaNamespace.runLocked(Lease::token); // the service that made the lock
            }
            // an operator deletes the unused parent, as docs/locks.md allows
            root.delete().deletingChildrenIfNeeded().forPath("/shop/locks/sku-1");
            long next = viaRoot.runLocked(Lease::token); // the other service recreates it
            assertThat(next)
                    .as("token %d before the deletion: every grant after a recreation must beat it", last)
                    .isGreaterThan(last);
        }
    }
}
