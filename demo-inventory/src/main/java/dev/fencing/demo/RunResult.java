package dev.fencing.demo;

import java.util.List;

/**
 * Everything one run produced: the checked end state, the counters and the timeline. Immutable.
 *
 * @param mode the run's mode
 * @param report the invariant checker's verdict on the database and the projection
 * @param staleWritesRejected writes PostgreSQL refused as stale (fenced-jdbc {@code Rejected} outcomes)
 * @param staleRecordsDropped records the downstream consumer dropped as stale
 * @param writeAttempts writes sent to the database (accepted or rejected)
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
        long writeAttempts,
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

    /**
     * Operations per second: write attempts (each one a full operation: lock, read, work, write, and for an
     * accepted write also publish, release) per second of workload time, pauses included.
     */
    public double opsPerSecond() {
        return workloadSeconds <= 0 ? 0 : writeAttempts / workloadSeconds;
    }
}
