package dev.fencing.bench;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * fencing-zookeeper against raw Curator {@code InterProcessMutex} on the same ZooKeeper: uncontended
 * acquire+release on one client, and 8 clients (8 sessions) contending for one lock. Then leader
 * election: handovers between two participants (two sessions), {@link FencedLeaderElection} against
 * Curator's {@code LeaderLatch}. One handover: the leader lets go (step down; closing the latch), the other
 * is elected, and the one that let go joins again behind it. Uses the embedded server, or {@code
 * FENCING_ZOOKEEPER_CONNECT}.
 *
 * <p>Run: {@code bench/run lock [rounds] [uncontendedOps] [contendedOpsPerClient] [handovers]}.
 */
public final class LockBenchmark {
    private static final int CLIENTS = 8;

    private LockBenchmark() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int uncontendedOps = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
        int contendedOpsPerClient = args.length > 2 ? Integer.parseInt(args[2]) : 150;
        int handovers = args.length > 3 ? Integer.parseInt(args[3]) : 300;

        try (ZooKeeperEndpoint zk = ZooKeeperServers.start()) {
            List<CuratorFramework> clients = new ArrayList<>();
            List<FencedLocks> fencedLocks = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                CuratorFramework client = CuratorFrameworkFactory.newClient(
                        zk.connectString(), 30_000, 10_000, new ExponentialBackoffRetry(50, 10));
                client.start();
                client.blockUntilConnected();
                clients.add(client);
                fencedLocks.add(FencedLocks.builder(client).build());
            }
            try {
                AlternatingRuns runs = new AlternatingRuns(rounds);

                InterProcessMutex rawSingle = new InterProcessMutex(clients.get(0), "/bench/raw-uncontended");
                FencedLock fencedSingle = fencedLocks.get(0).lock("/bench/fenced-uncontended");
                runs.compare(
                        "uncontended acquire+release, 1 client",
                        () -> timed(uncontendedOps, () -> {
                            for (int i = 0; i < uncontendedOps; i++) {
                                rawSingle.acquire();
                                rawSingle.release();
                            }
                            return null;
                        }),
                        () -> timed(uncontendedOps, () -> {
                            long sink = 0;
                            for (int i = 0; i < uncontendedOps; i++) {
                                try (Lease lease = fencedSingle.acquire()) {
                                    sink += lease.token();
                                }
                            }
                            return sink;
                        }));

                List<InterProcessMutex> rawShared = new ArrayList<>();
                List<FencedLock> fencedShared = new ArrayList<>();
                for (int i = 0; i < CLIENTS; i++) {
                    rawShared.add(new InterProcessMutex(clients.get(i), "/bench/raw-contended"));
                    fencedShared.add(fencedLocks.get(i).lock("/bench/fenced-contended"));
                }
                ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
                int contendedOps = CLIENTS * contendedOpsPerClient;
                runs.compare(
                        "contended acquire+release, " + CLIENTS + " clients",
                        () -> timed(
                                contendedOps,
                                () -> inParallel(pool, rawShared.size(), c -> {
                                    InterProcessMutex mutex = rawShared.get(c);
                                    for (int i = 0; i < contendedOpsPerClient; i++) {
                                        mutex.acquire();
                                        mutex.release();
                                    }
                                })),
                        () -> timed(
                                contendedOps,
                                () -> inParallel(pool, fencedShared.size(), c -> {
                                    FencedLock lock = fencedShared.get(c);
                                    for (int i = 0; i < contendedOpsPerClient; i++) {
                                        try (Lease lease = lock.acquire()) {
                                            lease.token();
                                        }
                                    }
                                })));
                pool.shutdown();

                AlternatingRuns leaderRuns = new AlternatingRuns(rounds);
                leaderRuns.compare(
                        "leader handovers, 2 participants",
                        () -> timed(handovers, () -> latchHandovers(clients, handovers)),
                        () -> timed(handovers, () -> electionHandovers(fencedLocks, clients, handovers)));

                System.out.println();
                System.out.println("fencing-zookeeper FencedLeaderElection vs raw Curator LeaderLatch, same ZooKeeper,"
                        + " ops = handovers");
                leaderRuns.printTable(System.out);
                System.out.printf(
                        Locale.ROOT,
                        "leader fenced handovers per second: %.1f (LeaderLatch: %.1f)%n",
                        leaderRuns.results().get(0).fencedOpsPerSecond(),
                        leaderRuns.results().get(0).rawOpsPerSecond());
                System.out.printf(Locale.ROOT, "leader fenced/raw throughput ratio: %.2f%n", leaderRuns.lowestRatio());

                System.out.println();
                System.out.println("fencing-zookeeper vs raw Curator InterProcessMutex, same ZooKeeper ("
                        + zk.connectString() + "), ops = acquire+release pairs");
                runs.printTable(System.out);
                System.out.printf(Locale.ROOT, "lock fenced/raw throughput ratio: %.2f%n", runs.lowestRatio());
            } finally {
                fencedLocks.forEach(FencedLocks::close);
                clients.forEach(CuratorFramework::close);
            }
        }
    }

    private static int latchRound;
    private static int electionRound;

    private static Object latchHandovers(List<CuratorFramework> clients, int handovers) throws Exception {
        String path = "/bench/raw-leader-" + latchRound++;
        LeaderLatch current = new LeaderLatch(clients.get(0), path, "a");
        current.start();
        current.await();
        LeaderLatch next = new LeaderLatch(clients.get(1), path, "b");
        next.start();
        awaitParticipants(clients.get(0), path, 2);
        for (int i = 0; i < handovers; i++) {
            CuratorFramework leaving = i % 2 == 0 ? clients.get(0) : clients.get(1);
            current.close();
            next.await();
            current = new LeaderLatch(leaving, path, i % 2 == 0 ? "a" : "b");
            current.start(); // joins again, behind the new leader
            LeaderLatch leader = next;
            next = current;
            current = leader;
        }
        current.close();
        next.close();
        return null;
    }

    private static Object electionHandovers(List<FencedLocks> locks, List<CuratorFramework> clients, int handovers)
            throws Exception {
        String path = "/bench/fenced-leader-" + electionRound++;
        FencedLeaderElection current = locks.get(0).election(path, "a");
        FencedLeaderElection next = locks.get(1).election(path, "b");
        current.awaitLeadership();
        join(next);
        awaitParticipants(clients.get(0), path, 2);
        long sink = 0;
        for (int i = 0; i < handovers; i++) {
            current.stepDown();
            sink += next.awaitLeadership().token();
            join(current); // joins again, behind the new leader
            FencedLeaderElection leader = next;
            next = current;
            current = leader;
        }
        current.close();
        next.close();
        return sink;
    }

    /** Joins without waiting: {@code lead} returns at once; the task idles until its term ends. */
    private static void join(FencedLeaderElection election) {
        election.lead(term -> {
            while (true) {
                Thread.sleep(60_000);
            }
        });
    }

    /** Waits until {@code count} participants' nodes are under {@code path} (the fenced parent's marker aside). */
    private static void awaitParticipants(CuratorFramework client, String path, int count) throws Exception {
        while (client.getChildren().forPath(path).stream()
                        .filter(child -> !child.startsWith("fencing-base-"))
                        .count()
                < count) {
            Thread.sleep(1);
        }
    }

    interface ClientWork {
        void run(int client) throws Exception;
    }

    /** Runs {@code work} for each of {@code clients} clients on the pool, all released at once; waits for all. */
    static Object inParallel(ExecutorService pool, int clients, ClientWork work) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            int client = c;
            futures.add(pool.submit(() -> {
                start.await();
                work.run(client);
                return null;
            }));
        }
        start.countDown();
        for (Future<?> future : futures) {
            future.get();
        }
        return null;
    }

    /** Operations per second of {@code work}, which does {@code ops} operations. */
    static double timed(int ops, Callable<?> work) throws Exception {
        long start = System.nanoTime();
        work.call();
        return ops / ((System.nanoTime() - start) / 1e9);
    }
}
