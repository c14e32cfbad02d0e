package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A participant in its own JVM, for {@link FencedLeaderElectionIT} to freeze with SIGSTOP. Joins once with
 * a task that works until interrupted. Prints {@code LEADER <token>} when elected; {@code INTERRUPTED
 * <cause> <valid>} when its task is interrupted; {@code TOLD <cause> <token>} when the lock listener hears
 * of the loss; {@code ENDED <cause> <isLeader>} when the candidacy is over; then, half a second later,
 * {@code OWN_NODES <n>}: how many nodes of its session are under the election path (0: it did not join
 * again on its own). Exits when its standard input ends. Arguments: connect string, election path,
 * participant id, session timeout in ms.
 */
public final class LeaderMain {
    private LeaderMain() {}

    public static void main(String[] args) throws Exception {
        String path = args[1];
        int sessionTimeoutMs = Integer.parseInt(args[3]);
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(sessionTimeoutMs)
                .retryPolicy(new ExponentialBackoffRetry(50, 3, 500))
                .build()) {
            client.start();
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to " + args[0]);
            }
            try (FencedLocks locks = FencedLocks.builder(client)
                    .listener(new FencedLockListener() {
                        @Override
                        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                            print("TOLD " + cause + " " + lease.token());
                        }
                    })
                    .build()) {
                FencedLeaderElection election = locks.election(path, args[2]);
                CompletableFuture<LeaseLoss> over = election.lead(term -> {
                    print("LEADER " + term.token());
                    try {
                        while (true) {
                            Thread.sleep(5); // the leader's work; the freeze comes from outside
                        }
                    } catch (InterruptedException e) {
                        print("INTERRUPTED " + term.lossCause() + " " + term.isValid());
                        throw e;
                    }
                });
                LeaseLoss cause = over.get();
                print("ENDED " + cause + " " + election.isLeader());
                Thread.sleep(500);
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                long own = 0;
                for (String child : client.getChildren().forPath(path)) {
                    var stat = client.checkExists().forPath(path + "/" + child);
                    if (stat != null && stat.getEphemeralOwner() == session) {
                        own++;
                    }
                }
                print("OWN_NODES " + own);
                try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                    while (in.readLine() != null) {
                        // wait for the test to end standard input
                    }
                }
            }
        }
    }

    private static synchronized void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
