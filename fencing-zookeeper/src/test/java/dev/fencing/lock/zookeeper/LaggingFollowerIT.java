package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.server.quorum.Learner;
import org.apache.zookeeper.server.quorum.QuorumPeer;
import org.junit.jupiter.api.Test;

/**
 * A holder whose client talks to a follower that lags behind the leader: the follower still shows a
 * node the leader has deleted. {@link Lease#verify()} must not take the follower's word for it. The
 * follower is held back by blocking its thread that reads from the leader, as a slow link to the
 * leader would, while its clients still reach it.
 */
class LaggingFollowerIT {
    private static final String PATH = "/it/lagging-follower";

    @Test
    void verifyDoesNotReportANodeDeletedOnTheLeaderAsPresentWhileAPlainReadOnTheFollowerDoes() throws Exception {
        try (TestingCluster cluster = startCluster();
                ZooKeeperClients clients = new ZooKeeperClients(connectString(leader(cluster)))) {
            InstanceSpec follower = follower(cluster);
            CuratorFramework admin = clients.newClient(Duration.ofSeconds(10));
            ZooKeeperClients onFollower = clients.track(new ZooKeeperClients(connectString(follower)));
            // The lease must still be valid when verify() starts, or its false answer would prove nothing about
            // the follower: with a 2 s session and the default pause tolerance, a loaded machine stalled the test
            // long enough for the pause detector to end the lease first. So a 10 s session (its connection times
            // out after about 6.7 s without answers) and a pause tolerance just below it (one not below the session
            // timeout is refused once the client has negotiated its session).
            CuratorFramework holderClient = onFollower.newClient(Duration.ofSeconds(10));
            FencedLocks locks = onFollower.track(FencedLocks.builder(holderClient)
                    .pauseTolerance(Duration.ofSeconds(9))
                    .build());
            Lease lease = locks.lock(PATH).acquire();
            String node = lockNode(holderClient);

            try (AutoCloseable held = holdBack(follower)) {
                admin.delete().forPath(node);

                assertThat(holderClient.checkExists().forPath(node))
                        .as("a plain read on the lagging follower still finds the deleted node")
                        .isNotNull();
                assertThat(lease.isValid())
                        .as("the lease as the holder knows it, before verify()")
                        .isTrue();
                assertThat(lease.verify()).isFalse();
                // the follower answers nothing of this session behind the pending sync, its pings
                // included, so the client may also see its connection time out meanwhile
                assertThat(lease.lossCause()).isIn(LeaseLoss.NODE_GONE, LeaseLoss.CONNECTION_SUSPENDED);
            }
        }
    }

    @Test
    void anInterruptWhileVerifyWaitsForTheSyncKeepsTheFlagAndLeavesTheLeaseValid() throws Exception {
        try (TestingCluster cluster = startCluster();
                ZooKeeperClients clients = new ZooKeeperClients(connectString(follower(cluster)))) {
            InstanceSpec follower = follower(cluster);
            // A long session: while the follower is held back it answers none of this session's pings
            // either, and a loaded machine can stall the test's threads for seconds; with 10 s the client
            // saw its connection time out (about 7 s) or the pause detector fire (3.3 s) before the interrupt,
            // and the lease was rightly invalid. Neither is what this test is about.
            CuratorFramework holderClient = clients.newClient(Duration.ofSeconds(60));
            Lease lease = clients.locks(holderClient).lock(PATH).acquire();
            assertThat(holderClient.getZookeeperClient().getZooKeeper().getSessionTimeout())
                    .as("negotiated session timeout, ms")
                    .isEqualTo(60_000);

            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicBoolean flagKept = new AtomicBoolean();
            try (AutoCloseable held = holdBack(follower)) {
                Thread verifier = new Thread(() -> {
                    try {
                        lease.verify();
                    } catch (RuntimeException e) {
                        thrown.set(e);
                        flagKept.set(Thread.currentThread().isInterrupted());
                    }
                });
                verifier.start();
                // the sync cannot complete while the follower is held back: verify waits for it
                await().atMost(Duration.ofSeconds(10)).until(() -> verifier.getState() == Thread.State.TIMED_WAITING);
                verifier.interrupt();
                verifier.join();

                assertThat(thrown.get())
                        .isInstanceOf(LockInterruptedException.class)
                        .hasMessageContaining(PATH);
                assertThat(flagKept).as("interrupt flag kept").isTrue();
                assertThat(lease.lossCause()).as("the lease is left as it was").isNull();
            }
        }
    }

    private static TestingCluster startCluster() throws Exception {
        Map<String, Object> properties = new HashMap<>();
        properties.put("admin.enableServer", "false");
        // sessions up to a minute (the default cap is 20 ticks, 10 s)
        properties.put("maxSessionTimeout", "60000");
        List<InstanceSpec> specs = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            specs.add(new InstanceSpec(null, -1, -1, -1, true, i, 500, -1, properties, "127.0.0.1"));
        }
        TestingCluster cluster = new TestingCluster(specs);
        cluster.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> cluster.getInstances().stream()
                .map(EmbeddedZooKeeperEnsemble::mode)
                .sorted()
                .toList()
                .equals(List.of("follower", "follower", "leader")));
        return cluster;
    }

    private static InstanceSpec leader(TestingCluster cluster) {
        return cluster.getInstances().stream()
                .filter(spec -> "leader".equals(EmbeddedZooKeeperEnsemble.mode(spec)))
                .findFirst()
                .orElseThrow();
    }

    private static InstanceSpec follower(TestingCluster cluster) {
        return cluster.getInstances().stream()
                .filter(spec -> "follower".equals(EmbeddedZooKeeperEnsemble.mode(spec)))
                .findFirst()
                .orElseThrow();
    }

    private static String connectString(InstanceSpec member) {
        return "127.0.0.1:" + member.getPort();
    }

    private static String lockNode(CuratorFramework client) throws Exception {
        return PATH + "/"
                + client.getChildren().forPath(PATH).stream()
                        .filter(child -> child.contains("lock-"))
                        .findFirst()
                        .orElseThrow();
    }

    /**
     * Takes the monitor that {@code member}'s learner thread holds while it reads a packet from the
     * leader, until closed: the follower applies nothing the leader sends meanwhile, and a sync it
     * forwards to the leader does not complete.
     */
    private static AutoCloseable holdBack(InstanceSpec member) throws Exception {
        QuorumPeer peer = Thread.getAllStackTraces().keySet().stream()
                .filter(thread -> thread instanceof QuorumPeer && thread.isAlive())
                .map(QuorumPeer.class::cast)
                .filter(p ->
                        p.getClientAddress() != null && p.getClientAddress().getPort() == member.getPort())
                .findFirst()
                .orElseThrow();
        Object fromLeader = field(peer.follower, Learner.class, "leaderIs");
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = new Thread(
                () -> {
                    synchronized (fromLeader) {
                        held.countDown();
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                },
                "hold-back-follower-" + member.getServerId());
        holder.setDaemon(true);
        holder.start();
        assertThat(held.await(30, TimeUnit.SECONDS))
                .as("the follower's reader let go of its stream")
                .isTrue();
        return () -> {
            release.countDown();
            holder.join();
        };
    }

    private static Object field(Object target, Class<?> declaring, String name) throws ReflectiveOperationException {
        Field field = declaring.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(target);
    }
}
