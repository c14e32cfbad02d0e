package dev.fencing.verify;

import dev.fencing.verify.client.PausePoint;
import java.util.EnumMap;
import java.util.Map;
import java.util.Random;

/**
 * When each fault is due and whom it targets: a sequence per fault kind, drawn from the seed alone, so the
 * fenced and the control run get the same schedule. A fault starts at its planned time or, if the previous
 * fault of its kind is still in progress then, as soon as that one ends. Not thread-safe: one lane per kind
 * asks for its own next fault.
 *
 * <pre>{@code
 * FaultSchedule schedule = new FaultSchedule(42);
 * FaultSchedule.Planned first = schedule.next(FaultKind.PAUSE); // same for every run with seed 42
 * }</pre>
 */
final class FaultSchedule {
    /**
     * One planned fault.
     *
     * @param kind what it is
     * @param index its number among its kind, from 0
     * @param atMillis when it is due, in milliseconds after the workload started
     * @param target whom it targets, a number to take modulo the candidates (writers, consumer members)
     * @param point where a pause stops its writer
     */
    record Planned(FaultKind kind, int index, long atMillis, int target, PausePoint point) {}

    /** When the first fault of a kind is due and how far apart the next ones are, on average. */
    private record Cadence(long firstMillis, long everyMillis) {}

    private static final Map<FaultKind, Cadence> CADENCE = new EnumMap<>(Map.of(
            FaultKind.PAUSE, new Cadence(2_000, 2_500),
            FaultKind.PARTITION, new Cadence(4_000, 11_000),
            FaultKind.LEADER_KILL, new Cadence(16_000, 45_000),
            FaultKind.BACKEND_KILL, new Cadence(6_000, 9_000),
            FaultKind.CONSUMER_CRASH, new Cadence(9_000, 13_000),
            FaultKind.REBALANCE, new Cadence(5_000, 25_000),
            FaultKind.SESSION_EXPIRY, new Cadence(3_000, 6_000),
            FaultKind.READ_PAUSE, new Cadence(1_000, 3_000)));

    private final Map<FaultKind, Random> randoms = new EnumMap<>(FaultKind.class);
    private final Map<FaultKind, Planned> last = new EnumMap<>(FaultKind.class);

    FaultSchedule(long seed) {
        for (FaultKind kind : FaultKind.values()) {
            randoms.put(kind, new Random(seed * 0x9E3779B97F4A7C15L + kind.ordinal() * 7919L));
        }
    }

    /** The next fault of {@code kind}. */
    Planned next(FaultKind kind) {
        Random random = randoms.get(kind);
        Cadence cadence = CADENCE.get(kind);
        Planned previous = last.get(kind);
        // each gap is the average +- 25%
        long jitter = (long) (cadence.everyMillis() * (random.nextDouble() - 0.5) / 2);
        long at = previous == null ? cadence.firstMillis() : previous.atMillis() + cadence.everyMillis() + jitter;
        int target = random.nextInt(1 << 16);
        PausePoint point = random.nextInt(3) < 2 ? PausePoint.LOCK_WRITE : PausePoint.WRITE_PUBLISH;
        Planned planned = new Planned(kind, previous == null ? 0 : previous.index() + 1, at, target, point);
        last.put(kind, planned);
        return planned;
    }
}
