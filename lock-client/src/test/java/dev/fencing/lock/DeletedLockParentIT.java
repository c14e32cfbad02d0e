package dev.fencing.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.ZooKeeper;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The whole chain when an operator deletes a lock's parent node: a row stores token 5; holder P is
 * granted 9 and freezes; its session expires and its node goes; the empty parent is deleted
 * recursively; new grants begin; holder N is granted a token and writes; P resumes and writes under 9.
 * With this library, N's token is above 9 and P's write is refused; with the same scenario on a plain
 * Curator lock whose token is its sequence number plus one (this library's earlier behaviour), N gets 6
 * and P's write under 9 lands on top of N's.
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
        String path = "/e2e/library/" + SKU;
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework admin = clients.newClient(Duration.ofSeconds(10));
            FencedLock others = clients.locks(admin).lock(path);
            for (int i = 0; i < 8; i++) {
                others.runLocked(Lease::token);
            }
            CuratorFramework pClient = clients.newClient(Duration.ofSeconds(10));
            Lease p = clients.locks(pClient).lock(path).acquire();
            assertThat(p.token()).isEqualTo(9);

            // P freezes; its session expires on the server and its node goes
            expire(zk, pClient);
            await().atMost(Duration.ofSeconds(20)).until(() -> admin.getChildren().forPath(path).stream()
                    .noneMatch(child -> child.contains("lock-")));
            // the now empty parent is deleted by an operator
            admin.delete().deletingChildrenIfNeeded().forPath(path);

            // new grants begin; N is the sixth
            for (int i = 0; i < 5; i++) {
                others.runLocked(Lease::token);
            }
            FencedLock nLock =
                    clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
            long nToken;
            try (Lease n = nLock.acquire()) {
                nToken = n.token();
                assertThat(writer.tryUpdate(take(1), nToken)).isInstanceOf(WriteOutcome.Applied.class);
            }
            assertThat(nToken).isGreaterThan(9);

            // P resumes and writes under 9
            WriteOutcome late = writer.tryUpdate(take(50), p.token());

            assertThat(late).isEqualTo(new WriteOutcome.Rejected(nToken, 9));
            assertThat(row()).isEqualTo("99:" + nToken);
        }
    }

    @Test
    void withAPlainCuratorLockWhoseTokenIsItsSequenceTheSameScenarioLetsTheLateWriteThrough() throws Exception {
        String path = "/e2e/plain/" + SKU;
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework admin = clients.newClient(Duration.ofSeconds(10));
            PlainMutex others = new PlainMutex(admin, path);
            for (int i = 0; i < 8; i++) {
                others.grantAndRelease();
            }
            CuratorFramework pClient = clients.newClient(Duration.ofSeconds(10));
            PlainMutex pLock = new PlainMutex(pClient, path);
            pLock.acquire();
            long pToken = pLock.token();
            assertThat(pToken).isEqualTo(9);

            expire(zk, pClient);
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> admin.getChildren().forPath(path).isEmpty());
            admin.delete().deletingChildrenIfNeeded().forPath(path);

            for (int i = 0; i < 5; i++) {
                others.grantAndRelease();
            }
            PlainMutex nLock = new PlainMutex(clients.newClient(Duration.ofSeconds(10)), path);
            nLock.acquire();
            long nToken = nLock.token();
            assertThat(writer.tryUpdate(take(1), nToken)).isInstanceOf(WriteOutcome.Applied.class);
            nLock.release();
            assertThat(nToken).isEqualTo(6);

            WriteOutcome late = writer.tryUpdate(take(50), pToken);

            assertThat(late).isEqualTo(new WriteOutcome.Applied(9));
            assertThat(row()).as("P's stale write landed on top of N's").isEqualTo("49:9");
        }
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

    private static void expire(EmbeddedZooKeeper zk, CuratorFramework client) throws Exception {
        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), handle.getSessionId(), handle.getSessionPasswd());
    }

    /** Plain Curator, with the token this library used to give: the holder node's sequence number + 1. */
    private static final class PlainMutex extends InterProcessMutex {
        PlainMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        long token() {
            String node = getLockPath();
            return Long.parseLong(node.substring(node.lastIndexOf("lock-") + "lock-".length())) + 1;
        }

        void grantAndRelease() throws Exception {
            acquire();
            release();
        }
    }
}
