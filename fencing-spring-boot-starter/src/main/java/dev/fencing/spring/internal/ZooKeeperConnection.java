package dev.fencing.spring.internal;

import java.util.Objects;
import org.apache.curator.framework.CuratorFramework;
import org.springframework.boot.health.contributor.Health;

/**
 * The Curator client's connection to ZooKeeper, as Curator knows it (no request): down while it is not connected,
 * when no lock can be taken and held leases are invalid.
 */
public final class ZooKeeperConnection implements LockServiceConnection {
    private final CuratorFramework client;

    public ZooKeeperConnection(CuratorFramework client) {
        this.client = Objects.requireNonNull(client, "client");
    }

    @Override
    public boolean report(Health.Builder health) {
        boolean connected = client.getZookeeperClient().isConnected();
        health.withDetail("zookeeper", connected ? "connected" : "not connected");
        health.withDetail("zookeeperConnectString", client.getZookeeperClient().getCurrentConnectionString());
        return connected;
    }
}
