package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class MutualExclusionIT {
    private static final int CLIENTS = 8;
    private static final int GRANTS_PER_CLIENT = 125;

    record Hold(long token, long start, long end, int client) {}

    @Test
    void eightClientsNeverOverlapAndTokensRiseInGrantOrder() throws Exception {
        String path = "/it/mutex/" + System.nanoTime();
        try (ZooKeeperEndpoint zk = ZooKeeperServers.start();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            List<FencedLock> locks = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                locks.add(
                        clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path));
            }
            ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger maxInside = new AtomicInteger();
            CountDownLatch start = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
            List<Future<?>> workers = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                FencedLock lock = locks.get(c);
                int client = c;
                workers.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < GRANTS_PER_CLIENT; i++) {
                        try (Lease lease = lock.acquire()) {
                            long begin = System.nanoTime();
                            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            Thread.onSpinWait();
                            inside.decrementAndGet();
                            holds.add(new Hold(lease.token(), begin, System.nanoTime(), client));
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> worker : workers) {
                worker.get(3, TimeUnit.MINUTES);
            }
            pool.shutdown();

            List<Hold> byStart = new ArrayList<>(holds);
            byStart.sort(Comparator.comparingLong(Hold::start));
            assertThat(byStart).hasSize(CLIENTS * GRANTS_PER_CLIENT);
            assertThat(maxInside).hasValue(1);
            for (int i = 1; i < byStart.size(); i++) {
                Hold previous = byStart.get(i - 1);
                Hold current = byStart.get(i);
                assertThat(current.start())
                        .as("hold %s starts after %s ended", current, previous)
                        .isGreaterThan(previous.end());
                assertThat(current.token())
                        .as("token of %s is above that of the grant before it, %s", current, previous)
                        .isGreaterThan(previous.token());
            }
            assertThat(byStart.stream().map(Hold::client).distinct()).hasSize(CLIENTS);
        }
    }
}
