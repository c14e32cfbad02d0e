package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.History;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One run's outcome: the checker's verdict, the faults, and what the run itself noticed.
 *
 * @param mode fenced or control
 * @param resource what the writers wrote
 * @param seed the seed
 * @param check the checker's verdict
 * @param history the histories the checker read (for the timeline)
 * @param faults every fault, in the order they ended
 * @param counted counted faults by kind (every kind present)
 * @param startMillis when the workload started, epoch ms
 * @param endMillis when it stopped, epoch ms
 * @param samples the run's processes (heap after a collection, file descriptors, threads) when the workload
 *     started, every {@link ModeRunner#SAMPLE_EVERY} and when it stopped
 * @param notes what else happened: consumers that stopped on their own, writers that failed, minimums missed
 * @param directory where its histories, fault log and child logs are
 */
record RunResult(
        Mode mode,
        Resource resource,
        long seed,
        CheckResult check,
        History history,
        List<Fault> faults,
        Map<FaultKind, Integer> counted,
        long startMillis,
        long endMillis,
        List<ResourceSample> samples,
        List<String> notes,
        Path directory) {}
