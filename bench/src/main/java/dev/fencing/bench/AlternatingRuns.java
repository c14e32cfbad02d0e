package dev.fencing.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Runs a raw baseline and the toolkit's version of the same work in alternating rounds in one JVM, so
 * both see the same JIT state, server state and machine noise, and reports the ratio of their median
 * throughputs.
 *
 * <pre>{@code
 * AlternatingRuns runs = new AlternatingRuns(5);
 * runs.compare("uncontended acquire+release", () -> rawOpsPerSecond(), () -> fencedOpsPerSecond());
 * runs.printTable(System.out);
 * double lowest = runs.lowestRatio();
 * }</pre>
 */
public final class AlternatingRuns {
    /** One round's work: does a fixed amount of work and returns operations per second. */
    @FunctionalInterface
    public interface Round {
        double opsPerSecond() throws Exception;
    }

    /** Medians of one case. */
    public record Result(String name, double rawOpsPerSecond, double fencedOpsPerSecond) {
        public double ratio() {
            return fencedOpsPerSecond / rawOpsPerSecond;
        }
    }

    private final int rounds;
    private final int warmUps;
    private final Map<String, Result> results = new LinkedHashMap<>();

    /** One warm-up round of each side before the measured ones. */
    public AlternatingRuns(int rounds) {
        this(rounds, 1);
    }

    /**
     * {@code warmUps} discarded rounds of each side before the measured ones: more where the first seconds still
     * climb (a server's own warm-up, not only the JIT's).
     */
    public AlternatingRuns(int rounds, int warmUps) {
        if (rounds < 1) {
            throw new IllegalArgumentException("rounds must be >= 1, got " + rounds);
        }
        if (warmUps < 1) {
            throw new IllegalArgumentException("warmUps must be >= 1, got " + warmUps);
        }
        this.rounds = rounds;
        this.warmUps = warmUps;
    }

    /** The warm-up rounds of each (discarded), then {@code rounds} alternating pairs; the order flips each pair. */
    public Result compare(String name, Round raw, Round fenced) throws Exception {
        for (int i = 0; i < warmUps; i++) {
            raw.opsPerSecond();
            fenced.opsPerSecond();
        }
        List<Double> rawRates = new ArrayList<>();
        List<Double> fencedRates = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            if (i % 2 == 0) {
                rawRates.add(raw.opsPerSecond());
                fencedRates.add(fenced.opsPerSecond());
            } else {
                fencedRates.add(fenced.opsPerSecond());
                rawRates.add(raw.opsPerSecond());
            }
            System.err.printf(
                    Locale.ROOT,
                    "  %s round %d/%d: raw %.0f/s, fenced %.0f/s%n",
                    name,
                    i + 1,
                    rounds,
                    rawRates.get(i),
                    fencedRates.get(i));
        }
        Result result = new Result(name, median(rawRates), median(fencedRates));
        results.put(name, result);
        return result;
    }

    public List<Result> results() {
        return List.copyOf(results.values());
    }

    public double lowestRatio() {
        return results.values().stream().mapToDouble(Result::ratio).min().orElseThrow();
    }

    public void printTable(java.io.PrintStream out) {
        out.printf(Locale.ROOT, "| %-40s | %14s | %14s | %6s |%n", "case", "raw ops/s", "fenced ops/s", "ratio");
        out.printf(Locale.ROOT, "|%s|%s|%s|%s|%n", "-".repeat(42), "-".repeat(16), "-".repeat(16), "-".repeat(8));
        for (Result r : results.values()) {
            out.printf(
                    Locale.ROOT,
                    "| %-40s | %14.1f | %14.1f | %6.3f |%n",
                    r.name(),
                    r.rawOpsPerSecond(),
                    r.fencedOpsPerSecond(),
                    r.ratio());
        }
        out.printf(
                Locale.ROOT,
                "(median of %d alternating rounds each, after %s)%n",
                rounds,
                warmUps == 1 ? "one warm-up round" : warmUps + " warm-up rounds");
    }

    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
