package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.lock.zookeeper.internal.LockRegistryIT.RecordingListener;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.TcpRelay;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The watch on a held node and the downgrade's delete of its read node, where a first version of each went
 * wrong: a watch left behind for a node gone before it was set, and a read node left behind by a retry that
 * found the write node gone.
 */
class NodeWatchIT {
    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService holder = Executors.newSingleThreadExecutor();
    private EmbeddedZooKeeper zk;
    private String path;

    @BeforeEach
    void start(TestInfo test) {
        zk = EmbeddedZooKeeper.builder().build();
        path = "/it/watch/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        holder.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        zk.close();
    }

    /**
     * The node is gone when the watch is set (an operator's delete within the first 100 ms; equally a release
     * that lands between the round's check of the hold and the server's answer). An exists() would answer
     * NONODE and leave a watch for the node's creation, which never comes (a unique name): that watch, and
     * through its callback the hold, its lock, listener and registry, stayed in the client (and one watch on
     * the server) for the rest of the session.
     */
    @Test
    void aNodeGoneBeforeItsWatchIsSetLeavesNoWatchBehind() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, Duration.ofHours(1));
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        registry.beforeDetectorTick(Hooks.once(() -> {
            held.countDown();
            resume.await();
        }));
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        Hold hold = (Hold) ((HeldLease) lease).hold();
        client().delete().forPath(hold.nodePath); // the operator, before the watch is armed
        resume.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> hold.loss() == LeaseLoss.NODE_GONE);
        lease.close();

        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
        assertThat(existWatches(handle))
                .as("exists watches left on the session after the lease ended and was closed")
                .doesNotContain(hold.nodePath);
    }

    /**
     * A downgrade's transaction is applied but its reply is lost; the write node is deleted before Curator's
     * retry (an operator, the very case NODE_GONE is about); the retried transaction fails its check with
     * NoNode, and the downgrade throws LeaseLostException. The first attempt's read node sorts in the write
     * node's place, unknown to Curator, and held every writer back until the session ended, as after an
     * interrupted downgrade (LeaseTruthIT): it must be deleted on every failure.
     */
    @Test
    void aDowngradeWhoseRetryFindsTheWriteNodeGoneLeavesNoReadNodeBehind() throws Exception {
        TcpRelay link = TcpRelay.to(zk.port());
        opened.add(link);
        CuratorFramework client = Hooks.startedClient("127.0.0.1:" + link.port());
        opened.add(client);
        FencedReadWriteLock mine = registry(client, Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        FencedReadWriteLock other = registry(client(), Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        CuratorFramework operator = client();

        Lease write = holder.submit(() -> mine.writeLock().acquire()).get(10, TimeUnit.SECONDS);
        String writeNode = ((Hold) ((HeldLease) write).hold()).nodePath;
        link.holdBack(); // the server's replies are lost from here
        Future<Lease> downgrade = holder.submit(() -> mine.readLock().acquire());
        await().atMost(Duration.ofSeconds(10))
                .alias("the downgrade's transaction applied")
                .until(() -> operator.getChildren().forPath(path).stream().anyMatch(n -> n.contains("__READ__")));
        operator.delete().forPath(writeNode);
        link.dropConnections(); // same session reconnects; Curator retries the transaction

        assertThatThrownBy(() -> downgrade.get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(LeaseLostException.class); // the retry's check: NoNode
        holder.submit(write::close).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(10))
                .alias("no read node left behind by the failed downgrade: "
                        + operator.getChildren().forPath(path))
                .until(() -> operator.getChildren().forPath(path).stream().noneMatch(n -> n.contains("__READ__")));
        Optional<Lease> next = other.writeLock().tryAcquire(Duration.ofSeconds(5));
        next.ifPresent(Lease::close);
        assertThat(next).as("another writer gets the lock").isPresent();
    }

    @SuppressWarnings("unchecked")
    private static List<String> existWatches(ZooKeeper handle) throws Exception {
        Method method = ZooKeeper.class.getDeclaredMethod("getExistWatches");
        method.setAccessible(true);
        return (List<String>) method.invoke(handle);
    }

    private LockRegistry registry(CuratorFramework client, Duration pauseTolerance) {
        LockRegistry registry = new LockRegistry(
                client, null, pauseTolerance, new RecordingListener(), FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        return registry;
    }

    private CuratorFramework client() {
        CuratorFramework client = Hooks.startedClient(zk.connectString());
        opened.add(client);
        return client;
    }
}
