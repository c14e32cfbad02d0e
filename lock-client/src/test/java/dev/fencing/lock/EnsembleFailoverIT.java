package dev.fencing.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.test.InstanceSpec;
import org.junit.jupiter.api.Test;

/** Leader failover in a real 3-server ensemble while clients contend for one lock. */
class EnsembleFailoverIT {
    private static final int CLIENTS = 4;

    record Hold(long token, long start, long end, boolean validAtEnd) {}

    @Test
    void tokensKeepRisingAndValidHoldsNeverOverlapWhileTheLeaderStopsAndReturns() throws Exception {
        String path = "/it/failover";
        try (EmbeddedZooKeeperEnsemble ensemble = EmbeddedZooKeeperEnsemble.start(3);
                ZooKeeperClients clients = new ZooKeeperClients(ensemble.connectString())) {
            List<FencedLock> locks = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                locks.add(
                        clients.locks(clients.newClient(Duration.ofSeconds(15))).lock(path));
            }
            ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
            AtomicInteger failures = new AtomicInteger();
            AtomicBoolean running = new AtomicBoolean(true);
            ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
            List<Future<?>> workers = new ArrayList<>();
            for (FencedLock lock : locks) {
                workers.add(pool.submit(() -> {
                    while (running.get()) {
                        try {
                            Optional<Lease> maybe = lock.tryAcquire(Duration.ofSeconds(2));
                            if (maybe.isEmpty()) {
                                continue;
                            }
                            try (Lease lease = maybe.get()) {
                                long start = System.nanoTime();
                                Thread.onSpinWait();
                                holds.add(new Hold(lease.token(), start, System.nanoTime(), lease.isValid()));
                            }
                        } catch (FencedLockException e) {
                            failures.incrementAndGet(); // expected while there is no leader
                        }
                    }
                    return null;
                }));
            }

            awaitMoreHolds(holds, 100);
            InstanceSpec leader = await().atMost(Duration.ofSeconds(30))
                    .until(ensemble::leader, Optional::isPresent)
                    .orElseThrow();
            ensemble.stop(leader);
            assertThat(EmbeddedZooKeeperEnsemble.mode(leader)).isEqualTo("down");
            awaitMoreHolds(holds, 100);
            assertThat(ensemble.leader()).as("a new leader took over").hasValueSatisfying(newLeader -> assertThat(
                            newLeader.getServerId())
                    .isNotEqualTo(leader.getServerId()));
            ensemble.restart(leader);
            awaitMoreHolds(holds, 100);
            running.set(false);
            for (Future<?> worker : workers) {
                worker.get(1, TimeUnit.MINUTES);
            }
            pool.shutdown();

            List<Hold> byStart = new ArrayList<>(holds);
            byStart.sort(Comparator.comparingLong(Hold::start));
            for (int i = 1; i < byStart.size(); i++) {
                assertThat(byStart.get(i).token())
                        .as("grant %d of %d", i, byStart.size())
                        .isGreaterThan(byStart.get(i - 1).token());
            }
            List<Hold> valid = byStart.stream().filter(Hold::validAtEnd).toList();
            for (int i = 1; i < valid.size(); i++) {
                assertThat(valid.get(i).start())
                        .as("valid hold %s starts after %s ended", valid.get(i), valid.get(i - 1))
                        .isGreaterThan(valid.get(i - 1).end());
            }
            assertThat(valid.size()).isGreaterThanOrEqualTo(250);
        }
    }

    private static void awaitMoreHolds(ConcurrentLinkedQueue<Hold> holds, int more) {
        int target = holds.size() + more;
        await().atMost(Duration.ofSeconds(90)).until(() -> holds.size() >= target);
    }
}
