package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Curator's {@code KillSession}, round after round: the holder's handle gets an Expired event, Curator
 * replaces the handle and only then reports LOST, while the old session's node goes and the next contender
 * is granted. In no round may the old lease or term read valid once the next holder has its grant.
 */
class InjectedExpiryIT {
    private static final int ROUNDS = 30;
    /** Short, so that the server removes an injected-expiry holder's node within about a second. */
    private static final Duration SESSION = Duration.ofSeconds(1);

    private final ExecutorService successorThread = Executors.newSingleThreadExecutor();
    private EmbeddedZooKeeper zk;
    private ZooKeeperClients clients;
    private String path;

    @BeforeEach
    void start(TestInfo test) {
        zk = EmbeddedZooKeeper.builder().build();
        clients = new ZooKeeperClients(zk.connectString());
        path = "/it/expiry/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        successorThread.shutdownNow();
        clients.close();
        zk.close();
    }

    @Test
    void noRoundOfInjectedExpiryLeavesTheOldLeaseValidAfterTheNextHolderWasGranted() throws Exception {
        CuratorFramework holderClient = clients.newClient(SESSION);
        FencedLock lock = clients.locks(holderClient).lock(path);
        FencedLock next =
                clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
        List<String> overlaps = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            Lease old = lock.acquire();
            Future<Lease> successor = successorThread.submit(() -> next.acquire());
            ZooKeeperSessions.injectExpiry(holderClient.getZookeeperClient().getZooKeeper());

            Lease taken = successor.get(30, TimeUnit.SECONDS);

            if (old.isValid()) {
                overlaps.add("round " + round + ": " + old + " beside " + taken);
            }
            assertThat(taken.token()).isGreaterThan(old.token());
            assertThat(old.lossCause()).isIn(LeaseLoss.SESSION_LOST, LeaseLoss.PAUSE_DETECTED);
            old.close();
            successorThread.submit(taken::close).get(30, TimeUnit.SECONDS);
            ZooKeeperClients.awaitReconnected(holderClient);
        }
        assertThat(overlaps).isEmpty();
    }

    @Test
    void noRoundOfInjectedExpiryLeavesTheOldTermValidAfterTheNextLeaderWasElected() throws Exception {
        CuratorFramework leaderClient = clients.newClient(SESSION);
        FencedLeaderElection a = clients.track(clients.locks(leaderClient).election(path, "a"));
        FencedLeaderElection b = clients.track(
                clients.locks(clients.newClient(Duration.ofSeconds(10))).election(path, "b"));
        List<String> overlaps = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            Leadership old = a.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();
            Future<Leadership> successor = successorThread.submit(() -> b.awaitLeadership());
            ZooKeeperSessions.injectExpiry(leaderClient.getZookeeperClient().getZooKeeper());

            Leadership taken = successor.get(30, TimeUnit.SECONDS);

            if (old.isValid() || a.isLeader()) {
                overlaps.add("round " + round + ": " + old + " beside " + taken);
            }
            assertThat(taken.token()).isGreaterThan(old.token());
            b.stepDown();
            ZooKeeperClients.awaitReconnected(leaderClient);
        }
        assertThat(overlaps).isEmpty();
    }
}
