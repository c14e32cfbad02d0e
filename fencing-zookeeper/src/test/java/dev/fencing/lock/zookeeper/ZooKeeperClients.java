package dev.fencing.lock.zookeeper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.AuthInfo;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Started Curator clients for tests, each with its own session; closes them all at the end. */
final class ZooKeeperClients implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperClients.class);

    private final String connectString;
    private final List<AutoCloseable> opened = new ArrayList<>();

    ZooKeeperClients(String connectString) {
        this.connectString = connectString;
    }

    CuratorFramework newClient(Duration sessionTimeout, AuthInfo... auth) {
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1_000));
        if (auth.length > 0) {
            builder.authorization(List.of(auth));
        }
        CuratorFramework client = builder.build();
        client.start();
        opened.add(client);
        return client;
    }

    /** Waits at most 30 s until {@code path} has {@code count} children that {@code which} accepts. */
    void awaitChildren(String path, Predicate<String> which, int count) throws Exception {
        CuratorFramework observer = newClient(Duration.ofSeconds(10));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (observer.checkExists().forPath(path) == null
                || observer.getChildren().forPath(path).stream().filter(which).count() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("fewer than " + count + " such children under " + path + " after 30 s: "
                        + (observer.checkExists().forPath(path) == null
                                ? "no node"
                                : observer.getChildren().forPath(path)));
            }
            Thread.sleep(10);
        }
    }

    /**
     * Asserts that {@code client}, whose session expired, is connected again within its connection timeout, and
     * leaves it usable: what {@code blockUntilConnectedOrTimedOut()} would assert if Curator's connected flag could
     * be trusted after an expiry.
     *
     * <p>It cannot (curator-client 5.9.0): the old handle's event thread reads the flag (true) in {@code
     * ConnectionState.process} (lines 145-148), replaces the handle in {@code reset()} and only then writes the
     * value it computed for Expired (false). When the new handle's event thread has connected and written true in
     * between, the stale false wins, and nothing corrects it until the new handle's next connection event: the
     * flag and the framework's state (LOST after RECONNECTED; ConnectionStateManager's LOST-but-connected check
     * reads the same flag) stay wrong, foreground operations wait out the connection timeout and background ones
     * fail. A handle that is CONNECTED behind a false flag is that race, not a slow reconnect, so the client
     * gets a fresh handle ({@code reset()} from this thread has no stale writer) and must connect in time. A handle
     * that is not connected fails the assertion, as before.
     */
    static void awaitReconnected(CuratorFramework client) throws Exception {
        CuratorZookeeperClient zookeeper = client.getZookeeperClient();
        if (zookeeper.blockUntilConnectedOrTimedOut()) {
            return;
        }
        ZooKeeper handle = zookeeper.getZooKeeper();
        if (handle.getState() != ZooKeeper.States.CONNECTED) {
            throw new AssertionError("not connected " + zookeeper.getConnectionTimeoutMs()
                    + " ms after the expiry: handle state " + handle.getState() + ", client state "
                    + client.getState());
        }
        LOG.warn(
                "Curator's connected flag stayed false for connected session 0x{} (stale write after an expiry);"
                        + " giving the client a fresh handle",
                Long.toHexString(handle.getSessionId()));
        zookeeper.reset();
        if (!zookeeper.blockUntilConnectedOrTimedOut()) {
            throw new AssertionError("a fresh handle did not connect within " + zookeeper.getConnectionTimeoutMs()
                    + " ms: handle state " + zookeeper.getZooKeeper().getState());
        }
    }

    FencedLocks locks(CuratorFramework client) {
        return track(FencedLocks.builder(client).build());
    }

    <T extends AutoCloseable> T track(T closeable) {
        opened.add(closeable);
        return closeable;
    }

    @Override
    public void close() {
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception ignored) {
                // best effort at teardown
            }
        }
    }
}
