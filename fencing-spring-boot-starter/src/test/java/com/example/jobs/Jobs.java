package com.example.jobs;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.Lease;
import dev.fencing.spring.CurrentLease;
import dev.fencing.spring.FencedLocked;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.jdbi.v3.core.Jdbi;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Two scheduled jobs, run by every instance: {@link #cleanup()} skips while another holder has its lock, and
 * {@link #report()} runs under ShedLock with the starter's provider, writing a row under its token and (as the
 * control) the same write as a plain UPDATE.
 */
@Component
public class Jobs {
    /** Shared by every instance in this JVM: what the tests observe. */
    public static final AtomicInteger REPORTS_RUNNING = new AtomicInteger();

    public static final AtomicInteger MOST_REPORTS_AT_ONCE = new AtomicInteger();
    public static final List<Run> REPORT_RUNS = new CopyOnWriteArrayList<>();
    public static volatile Gate reportGate = Gate.passing();

    private final AtomicInteger cleanupRuns = new AtomicInteger();
    private final List<Long> cleanupTokens = new CopyOnWriteArrayList<>();

    private final String instance;
    private final FencedWriter writer;
    private final Jdbi jdbi;
    private final FencedTable report;

    public Jobs(@Value("${spring.application.name}") String instance, FencedWriter writer, Jdbi jdbi) {
        this.instance = instance;
        this.writer = writer;
        this.jdbi = jdbi;
        this.report = FencedTable.builder().table("report").keyColumns("name").build(jdbi);
    }

    /** How many times this instance's cleanup began (a method: the bean is a proxy). */
    public int cleanupRuns() {
        return cleanupRuns.get();
    }

    /** The tokens of this instance's cleanup runs. */
    public List<Long> cleanupTokens() {
        return cleanupTokens;
    }

    @Scheduled(fixedDelay = 100)
    @FencedLocked(value = "/locks/jobs/cleanup", skipIfLocked = true)
    public void cleanup() {
        cleanupRuns.incrementAndGet();
        cleanupTokens.add(CurrentLease.token()); // send it with every write, as a @FenceToken parameter's
    }

    /** Not scheduled: waits at most 200 ms for the cleanup's lock, and returns its token, or nothing. */
    @FencedLocked(value = "/locks/jobs/cleanup", skipIfLocked = true, timeout = "200ms")
    public Optional<Long> cleanupTokenIfFree() {
        return Optional.of(CurrentLease.token());
    }

    /** Not scheduled: waits at most 200 ms for the cleanup's lock and returns its token, or throws. */
    @FencedLocked(value = "/locks/jobs/cleanup", timeout = "200ms")
    public long cleanupTokenWithinTimeout() {
        return CurrentLease.token();
    }

    @Scheduled(fixedDelay = 1_000)
    @SchedulerLock(name = "tally", lockAtMostFor = "PT10M")
    public void tally() {
        FencedUpdate counted = FencedUpdate.builder(report)
                .key("tally")
                .setExpression("runs", "runs + 1")
                .build();
        writer.update(counted, CurrentLease.token()); // refused once a later run of the job has written
    }

    @Scheduled(fixedDelay = 100)
    @SchedulerLock(name = "report")
    public void report() {
        int running = REPORTS_RUNNING.incrementAndGet();
        MOST_REPORTS_AT_ONCE.accumulateAndGet(running, Math::max);
        try {
            long token = CurrentLease.token(); // this run's grant, from the FencedLockProvider
            Run run = new Run(instance, CurrentLease.get().orElseThrow());
            REPORT_RUNS.add(run);
            reportGate.pass(run);
            run.fenced = writer.tryUpdate(reportRun(), token);
            run.plainRows = jdbi.withHandle(h ->
                    h.execute("UPDATE report SET runs = runs + 1, last_writer = ? WHERE name = 'plain'", instance));
        } finally {
            REPORTS_RUNNING.decrementAndGet();
        }
    }

    /** The fenced row's update: one more run, and who ran it. */
    private FencedUpdate reportRun() {
        return FencedUpdate.builder(report)
                .key("fenced")
                .setExpression("runs", "runs + 1")
                .set("last_writer", instance)
                .build();
    }

    /** One run of {@link #report()}: where, under which lease, and what its writes did. */
    public static final class Run {
        public final String instance;
        public final Lease lease;
        public volatile WriteOutcome fenced;
        public volatile int plainRows = -1;

        Run(String instance, Lease lease) {
            this.instance = instance;
            this.lease = lease;
        }
    }
}
