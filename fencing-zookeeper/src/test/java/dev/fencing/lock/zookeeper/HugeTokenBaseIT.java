package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.internal.LockParents;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;

/**
 * A SEQUENCE lock whose stored token base lies so high that its tokens (base + sequence + 1) or its next
 * incarnation's base (stored base + 2^31) would pass {@code Long.MAX_VALUE}: a marker or history written
 * by hand, or restored corrupted. No token is issued, the lock node is released, and the error names the
 * lock path and the value, where {@code Math.addExact} threw a bare "long overflow".
 */
class HugeTokenBaseIT {

    @Test
    void aMarkerWhoseTokensWouldPassLongMaxFailsTheGrantNamingThePathAndTheBase() throws Exception {
        String path = "/huge/marker/sku-1";
        long base = Long.MAX_VALUE - 1;
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            client.create().creatingParentsIfNeeded().forPath(path);
            client.create().forPath(path + "/" + LockParents.marker(base));
            FencedLock lock = clients.locks(client).lock(path);

            assertThatThrownBy(() -> lock.runLocked(Lease::token))
                    .isInstanceOf(FenceTokenExhaustedException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining(Long.toString(base));
            assertThat(client.getChildren().forPath(path))
                    .as("the refused grant's lock node is released")
                    .containsExactly(LockParents.marker(base));
        }
    }

    @Test
    void aHistoryBaseWhoseNextIncarnationWouldPassLongMaxCreatesNoParentAndNamesTheValue() throws Exception {
        String path = "/huge/history/sku-1";
        String stored = Long.toString(Long.MAX_VALUE - 1000);
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
            client.create()
                    .creatingParentsIfNeeded()
                    .forPath(LockParents.historyOf(path), stored.getBytes(StandardCharsets.US_ASCII));
            FencedLock lock = clients.locks(client).lock(path);

            assertThatThrownBy(() -> lock.runLocked(Lease::token))
                    .isInstanceOf(FenceTokenExhaustedException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining(stored);
            assertThat(client.checkExists().forPath(path))
                    .as("no parent is made")
                    .isNull();
        }
    }
}
