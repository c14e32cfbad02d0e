package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLockException;
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
import org.apache.curator.test.InstanceSpec;

/**
 * Contenders (lock holders or election participants) run while a real ensemble's leader stops and
 * returns; then grants must have risen in the order they began, and valid ones must not overlap.
 */
final class EnsembleFailover {
    private EnsembleFailover() {}

    record Hold(long token, long start, long end, boolean validAtEnd) {}

    /** One grant or term: the hold it had, or empty when there was none this time. */
    interface Contender {
        Optional<Hold> once();
    }

    /** Runs the contenders while the ensemble's leader stops and returns; {@code step} holds between faults. */
    static List<Hold> throughFailover(EmbeddedZooKeeperEnsemble ensemble, List<Contender> contenders, int step)
            throws Exception {
        ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
        AtomicBoolean running = new AtomicBoolean(true);
        ExecutorService pool = Executors.newFixedThreadPool(contenders.size());
        List<Future<?>> workers = new ArrayList<>();
        for (Contender contender : contenders) {
            workers.add(pool.submit(() -> {
                while (running.get()) {
                    try {
                        contender.once().ifPresent(holds::add);
                    } catch (FencedLockException e) {
                        // expected while there is no leader
                    }
                }
                return null;
            }));
        }
        awaitMoreHolds(holds, step);
        InstanceSpec leader = await().atMost(Duration.ofSeconds(30))
                .until(ensemble::leader, Optional::isPresent)
                .orElseThrow();
        ensemble.stop(leader);
        assertThat(EmbeddedZooKeeperEnsemble.mode(leader)).isEqualTo("down");
        awaitMoreHolds(holds, step);
        assertThat(ensemble.leader()).as("a new leader took over").hasValueSatisfying(newLeader -> assertThat(
                        newLeader.getServerId())
                .isNotEqualTo(leader.getServerId()));
        ensemble.restart(leader);
        awaitMoreHolds(holds, step);
        running.set(false);
        for (Future<?> worker : workers) {
            worker.get(1, TimeUnit.MINUTES);
        }
        pool.shutdown();
        return new ArrayList<>(holds);
    }

    static void assertRisingAndDisjoint(List<Hold> holds, int minimumValid) {
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
        assertThat(valid.size()).isGreaterThanOrEqualTo(minimumValid);
    }

    private static void awaitMoreHolds(ConcurrentLinkedQueue<Hold> holds, int more) {
        int target = holds.size() + more;
        await().atMost(Duration.ofSeconds(90)).until(() -> holds.size() >= target);
    }
}
