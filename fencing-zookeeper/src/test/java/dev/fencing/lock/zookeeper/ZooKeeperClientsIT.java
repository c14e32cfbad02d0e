package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ZooKeeperClients#awaitReconnected}: a connected handle behind Curator's stale connected flag (what
 * curator-client 5.9.0 leaves when the old handle's event thread writes false after the new handle connected) is
 * healed; a handle that is not connected still fails.
 */
class ZooKeeperClientsIT {
    private EmbeddedZooKeeper zk;
    private ZooKeeperClients clients;

    @BeforeEach
    void start() {
        zk = EmbeddedZooKeeper.builder().build();
        clients = new ZooKeeperClients(zk.connectString());
    }

    @AfterEach
    void stop() {
        clients.close();
        zk.close();
    }

    @Test
    void aConnectedHandleBehindAStaleFlagGetsAFreshHandleAndServesBackgroundOperationsAgain() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(1));
        assertThat(client.blockUntilConnected(10, TimeUnit.SECONDS)).isTrue();
        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();

        writeStaleFlag(client);

        assertThat(handle.getState()).isEqualTo(ZooKeeper.States.CONNECTED);
        assertThat(client.getZookeeperClient().isConnected()).isFalse();
        ZooKeeperClients.awaitReconnected(client);
        assertThat(client.getZookeeperClient().isConnected()).isTrue();
        assertThat(client.getZookeeperClient().getZooKeeper()).isNotSameAs(handle);
        CompletableFuture<Integer> resultCode = new CompletableFuture<>();
        client.checkExists()
                .inBackground((c, event) -> resultCode.complete(event.getResultCode()))
                .forPath("/");
        assertThat(resultCode.get(2, TimeUnit.SECONDS)).isZero();
    }

    @Test
    void aHandleThatDidNotReconnectStillFails() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(1));
        assertThat(client.blockUntilConnected(10, TimeUnit.SECONDS)).isTrue();
        zk.stop();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> !client.getZookeeperClient().isConnected());

        assertThatThrownBy(() -> ZooKeeperClients.awaitReconnected(client))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("not connected");
    }

    /** The end state of the race: the handle is connected, Curator's {@code ConnectionState.isConnected} false. */
    private static void writeStaleFlag(CuratorFramework client) throws ReflectiveOperationException {
        Field state = CuratorZookeeperClient.class.getDeclaredField("state");
        state.setAccessible(true);
        Object connectionState = state.get(client.getZookeeperClient());
        Field isConnected = connectionState.getClass().getDeclaredField("isConnected");
        isConnected.setAccessible(true);
        ((AtomicBoolean) isConnected.get(connectionState)).set(false);
    }
}
