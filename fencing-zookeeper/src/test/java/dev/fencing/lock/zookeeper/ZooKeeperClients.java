package dev.fencing.lock.zookeeper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.curator.framework.AuthInfo;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/** Started Curator clients for tests, each with its own session; closes them all at the end. */
final class ZooKeeperClients implements AutoCloseable {
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
