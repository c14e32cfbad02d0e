package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.function.BiFunction;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.ZooKeeper;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The whole chain when a lock's parent node goes away: a row stores token 5; holder P is granted 9 and
 * freezes; its session expires and its node goes; the empty parent is deleted (an operator's {@code
 * deleteall}) or reaped (a CONTAINER, as plain Curator makes them); new grants begin; holder N is granted
 * a token and writes; P resumes and writes under 9. With this library, N's token is above 9 and P's
 * write is refused; with the same scenario on a plain Curator lock whose token is its sequence number
 * plus one (this library's earlier behaviour), N gets 6 and P's write under 9 lands on top of N's.
 */
class DeletedLockParentIT {
    private static final String SKU = "sku-1";

    static PostgresEndpoint database;
    static Jdbi jdbi;
    static FencedTable inventory;

    FencedWriter writer;

    @BeforeAll
    static void createDatabase() {
        database = PostgresServers.shared().createDatabase("lock_parent_it");
        jdbi = Jdbi.create(database.dataSource());
        jdbi.useHandle(h -> h.execute("CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL,"
                + " last_fence_token BIGINT NOT NULL DEFAULT 0)"));
        inventory = FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
    }

    @AfterAll
    static void dropDatabase() {
        database.close();
    }

    @BeforeEach
    void rowStoresTokenFive() {
        jdbi.useHandle(h -> {
            h.execute("DELETE FROM inventory");
            h.execute("INSERT INTO inventory (sku, stock, last_fence_token) VALUES (?, 100, 5)", SKU);
        });
        writer = FencedWriter.builder(jdbi).build();
    }

    @Test
    void afterTheParentIsDeletedTheNewHoldersTokenBeatsTheFrozenHoldersAndItsLateWriteIsRefused() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            Tokens tokens =
                    run(zk, clients, "/e2e/library/" + SKU, (c, p) -> library(clients, c, p), Removal.DELETEALL);

            assertThat(tokens.n()).isGreaterThan(9);
            assertThat(writer.tryUpdate(take(50), tokens.p())).isEqualTo(new WriteOutcome.Rejected(tokens.n(), 9));
            assertThat(row()).isEqualTo("99:" + tokens.n());
        }
    }

    @Test
    void withAPlainCuratorLockWhoseTokenIsItsSequenceTheSameScenarioLetsTheLateWriteThrough() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            Tokens tokens = run(zk, clients, "/e2e/plain/" + SKU, DeletedLockParentIT::plain, Removal.DELETEALL);

            assertThat(tokens.n()).isEqualTo(6);
            assertThat(writer.tryUpdate(take(50), tokens.p())).isEqualTo(new WriteOutcome.Applied(9));
            assertThat(row()).as("P's stale write landed on top of N's").isEqualTo("49:9");
        }
    }

    @Test
    void theContainerReaperCannotRemoveTheLibrarysParentSoTheFrozenHoldersLateWriteIsRefused() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder()
                        .containerCheckInterval(Duration.ofMillis(100))
                        .build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            String path = "/e2e/library-reaper/" + SKU;
            Tokens tokens = run(zk, clients, path, (c, p) -> library(clients, c, p), Removal.CONTAINER_REAPER);

            assertThat(tokens.n()).isEqualTo(15);
            assertThat(writer.tryUpdate(take(50), tokens.p())).isEqualTo(new WriteOutcome.Rejected(15, 9));
            assertThat(row()).isEqualTo("99:15");
        }
    }

    @Test
    void withAPlainCuratorLockWhoseContainerParentIsReapedTheLateWriteGetsThrough() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder()
                        .containerCheckInterval(Duration.ofMillis(100))
                        .build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            String path = "/e2e/plain-reaper/" + SKU;
            Tokens tokens = run(zk, clients, path, DeletedLockParentIT::plain, Removal.CONTAINER_REAPER, true);

            assertThat(tokens.n()).isEqualTo(7);
            assertThat(writer.tryUpdate(take(50), tokens.p())).isEqualTo(new WriteOutcome.Applied(9));
            assertThat(row()).isEqualTo("49:9");
        }
    }

    /** How the lock's parent goes away while nobody holds the lock. */
    enum Removal {
        /** An operator's {@code deleteall}. */
        DELETEALL,
        /** ZooKeeper's container reaper, given time to run (a plain container elsewhere vanishes meanwhile). */
        CONTAINER_REAPER
    }

    record Tokens(long p, long n) {}

    /** A lock as the scenario uses it: one grant at a time per instance. */
    interface TokenLock {
        long acquire() throws Exception;

        void release() throws Exception;
    }

    /**
     * The scenario up to P's late write: 8 grants, P granted 9 and frozen, P's session expired
     * and its node gone, the parent removed, 5 more grants, N granted and writing one unit.
     */
    private Tokens run(
            EmbeddedZooKeeper zk,
            ZooKeeperClients clients,
            String path,
            BiFunction<CuratorFramework, String, TokenLock> locks,
            Removal removal)
            throws Exception {
        return run(zk, clients, path, locks, removal, false);
    }

    /**
     * @param keepPlainParent hold a plain container parent with an extra child until P is frozen, so the
     *     reaper cannot restart its sequence before P's grant
     */
    private Tokens run(
            EmbeddedZooKeeper zk,
            ZooKeeperClients clients,
            String path,
            BiFunction<CuratorFramework, String, TokenLock> locks,
            Removal removal,
            boolean keepPlainParent)
            throws Exception {
        CuratorFramework admin = clients.newClient(Duration.ofSeconds(10));
        if (keepPlainParent) {
            admin.create().creatingParentContainersIfNeeded().forPath(path + "/keeper");
        }
        TokenLock others = locks.apply(admin, path);
        for (long token = 0; token < 8; ) {
            token = others.acquire();
            others.release();
        }
        CuratorFramework pClient = clients.newClient(Duration.ofSeconds(10));
        long pToken = locks.apply(pClient, path).acquire();
        assertThat(pToken).isEqualTo(9);

        // P freezes; its session expires on the server and its node goes
        ZooKeeper handle = pClient.getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), handle.getSessionId(), handle.getSessionPasswd());
        await().atMost(Duration.ofSeconds(20))
                .until(() -> admin.checkExists().forPath(path) == null
                        || admin.getChildren().forPath(path).stream().noneMatch(child -> child.contains("lock-")));
        if (keepPlainParent) {
            admin.delete().forPath(path + "/keeper");
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> admin.checkExists().forPath(path) == null);
        }
        if (removal == Removal.DELETEALL) {
            admin.delete().deletingChildrenIfNeeded().forPath(path);
        } else {
            InterProcessMutex witness = new InterProcessMutex(admin, "/e2e/witness" + path);
            witness.acquire();
            witness.release();
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> admin.checkExists().forPath("/e2e/witness" + path) == null);
        }

        if (keepPlainParent) {
            // the reaper checks every 100 ms: without a child between the acquires below, it could delete the
            // re-created parent again among them and restart the sequence once more (its create counts: +1)
            admin.create().creatingParentContainersIfNeeded().forPath(path + "/keeper");
        }
        for (int i = 0; i < 5; i++) {
            others.acquire();
            others.release();
        }
        TokenLock nLock = locks.apply(clients.newClient(Duration.ofSeconds(10)), path);
        long nToken = nLock.acquire();
        if (keepPlainParent) {
            admin.delete().forPath(path + "/keeper");
        }
        assertThat(writer.tryUpdate(take(1), nToken)).isInstanceOf(WriteOutcome.Applied.class);
        nLock.release();
        return new Tokens(pToken, nToken);
    }

    private static TokenLock library(ZooKeeperClients clients, CuratorFramework client, String path) {
        FencedLock lock = clients.locks(client).lock(path);
        return new TokenLock() {
            private Lease lease;

            @Override
            public long acquire() {
                lease = lock.acquire();
                return lease.token();
            }

            @Override
            public void release() {
                lease.close();
            }
        };
    }

    /** Plain Curator, with the token this library used to give: the holder node's sequence number + 1. */
    private static TokenLock plain(CuratorFramework client, String path) {
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        return new TokenLock() {
            @Override
            public long acquire() throws Exception {
                mutex.acquire();
                String node = mutex.getParticipantNodes().stream()
                        .filter(n -> n.startsWith(path + "/"))
                        .findFirst()
                        .orElseThrow();
                return Long.parseLong(node.substring(node.lastIndexOf("lock-") + "lock-".length())) + 1;
            }

            @Override
            public void release() throws Exception {
                mutex.release();
            }
        };
    }

    private static FencedUpdate take(int qty) {
        return FencedUpdate.builder(inventory)
                .key(SKU)
                .setExpression("stock", "stock - :qty")
                .bind("qty", qty)
                .build();
    }

    private static String row() {
        return jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM inventory WHERE sku = :sku")
                        .bind("sku", SKU)
                        .mapTo(String.class)
                        .one());
    }
}
