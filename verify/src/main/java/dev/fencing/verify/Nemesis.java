package dev.fencing.verify;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Injects the run's faults on the {@link FaultSchedule}: one thread per fault kind takes its kind's next planned
 * fault, waits until it is due and injects it through the {@link FaultInjector}; pauses overlap (up to half the
 * writers at once, each on a thread of its own), the other kinds follow one another. A kind stops once the
 * workload time is over and its minimum is reached, or at the run's hard limit. {@link #stop()} lets the faults
 * in progress finish (thawed, healed, restarted) and returns.
 *
 * <p>Thread-safe.
 */
final class Nemesis {
    private static final Logger LOG = LoggerFactory.getLogger(Nemesis.class);

    private final FaultSchedule schedule;
    private final FaultInjector injector;
    private final FaultLog log;
    private final Set<FaultKind> kinds;
    private final long runStart;
    private final long workloadEnd;
    private final long hardEnd;
    private final Semaphore pauses;
    private final ExecutorService pauseThreads;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final List<Thread> lanes = new ArrayList<>();

    /**
     * @param kinds the faults to inject (those requested and possible here)
     * @param duration the workload time: kinds stop after it once they reached their minimum
     * @param hardLimit when every kind stops, reached or not
     */
    Nemesis(
            FaultSchedule schedule,
            FaultInjector injector,
            FaultLog log,
            Set<FaultKind> kinds,
            long runStart,
            Duration duration,
            Duration hardLimit,
            int writers) {
        this.schedule = schedule;
        this.injector = injector;
        this.log = log;
        this.kinds = Set.copyOf(kinds);
        this.runStart = runStart;
        this.workloadEnd = runStart + duration.toMillis();
        this.hardEnd = runStart + hardLimit.toMillis();
        int concurrentPauses = Math.max(1, Math.min(3, writers / 2));
        this.pauses = new Semaphore(concurrentPauses);
        this.pauseThreads = Executors.newFixedThreadPool(concurrentPauses, runnable -> {
            Thread thread = new Thread(runnable, "nemesis-pause");
            thread.setDaemon(true);
            return thread;
        });
    }

    void start() {
        for (FaultKind kind : kinds) {
            Thread lane = new Thread(() -> lane(kind), "nemesis-" + kind.flagName());
            lane.setDaemon(true);
            lanes.add(lane);
            lane.start();
        }
    }

    /** Whether every kind has reached its minimum. */
    boolean minimumsReached() {
        return kinds.stream().allMatch(kind -> log.counted(kind) >= kind.minimum());
    }

    /** Starts no more faults, waits for those in progress to end. */
    void stop() throws InterruptedException {
        stop.countDown();
        for (Thread lane : lanes) {
            lane.join();
        }
        pauseThreads.shutdown();
        if (!pauseThreads.awaitTermination(2, TimeUnit.MINUTES)) {
            LOG.warn("pauses still in progress after 2 minutes");
        }
    }

    private boolean done(FaultKind kind) {
        long now = System.currentTimeMillis();
        return stop.getCount() == 0 || now >= hardEnd || (now >= workloadEnd && log.counted(kind) >= kind.minimum());
    }

    private void lane(FaultKind kind) {
        try {
            while (true) {
                FaultSchedule.Planned planned = schedule.next(kind);
                long wait = runStart + planned.atMillis() - System.currentTimeMillis();
                if (wait > 0 && stop.await(wait, TimeUnit.MILLISECONDS)) {
                    return;
                }
                if (done(kind)) {
                    return;
                }
                if (kind == FaultKind.PAUSE) {
                    pauses.acquire();
                    pauseThreads.execute(() -> {
                        try {
                            injector.inject(planned);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } catch (RuntimeException e) {
                            LOG.error("pause {} failed", planned, e);
                            log.note("pause failed: " + e);
                        } finally {
                            pauses.release();
                        }
                    });
                } else {
                    injector.inject(planned);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.error("{} faults stopped", kind.flagName(), e);
            log.note(kind.flagName() + " faults stopped: " + e);
        }
    }
}
