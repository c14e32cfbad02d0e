package dev.fencing.demo;

import java.util.List;

/**
 * Everything one run produced: the checked end state, the counters and the timeline. Immutable.
 *
 * @param mode the run's mode
 * @param report the invariant checker's verdict on the database and the projection
 * @param staleWritesRejected writes PostgreSQL refused as stale (fencing-jdbc {@code Rejected} outcomes)
 * @param staleRecordsDropped records the downstream consumer dropped as stale
 * @param operations completed lock-protected operations: lock, read, then a write (accepted or rejected)
 *     or a sold-out answer, release
 * @param workloadSeconds from START to the last worker's STOP
 * @param workers the number of worker JVMs
 * @param startMillis when the workers were told to START, epoch millis
 * @param endMillis when they were told to STOP, epoch millis
 * @param events every worker event
 * @param pauses every injected pause
 */
record RunResult(
        Mode mode,
        InvariantChecker.InvariantReport report,
        long staleWritesRejected,
        long staleRecordsDropped,
        long operations,
        double workloadSeconds,
        int workers,
        long startMillis,
        long endMillis,
        List<WorkerEvent> events,
        List<RunRecorder.Pause> pauses) {

    public RunResult {
        events = List.copyOf(events);
        pauses = List.copyOf(pauses);
    }

    /** SIGSTOPs sent. */
    public int pausesInjected() {
        return pauses.size();
    }

    /** Pauses during which another worker took the SKU over: the ones that test anything. */
    public long pausesLanded() {
        return pauses.stream().filter(RunRecorder.Pause::landed).count();
    }

    /** Lease-check mode: writes that {@code lease.ensureValid()} stopped. */
    public long leaseCheckRefusals() {
        return events.stream()
                .filter(e -> e.kind() == WorkerEvent.Kind.LEASE_CHECK_REFUSED)
                .count();
    }

    /** Operations per second of workload time, pauses included. Not a benchmark: the pauses dominate it. */
    public double opsPerSecond() {
        return workloadSeconds <= 0 ? 0 : operations / workloadSeconds;
    }
}
