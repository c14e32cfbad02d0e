package dev.fencing.bench;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Alternating raw/fenced rounds for the Kafka benchmarks: one warm-up pair (discarded), then {@code rounds}
 * pairs whose order flips each time. The ratio is the median of each pair's own ratio (a fenced round against
 * the raw round next to it): a machine whose speed drifts during a run (a neighbour's load, a JIT, a
 * compaction on the broker) moves both rounds of a pair, and the ratio of the two sides' medians, which pairs
 * a fenced round with a raw round from another part of the run, moved with it (0.74 and 0.85 on one idle
 * machine). The table prints both.
 */
final class KafkaRounds {
    /** One round: reads the whole topic once and returns records per second. */
    @FunctionalInterface
    interface Round {
        double recordsPerSecond();
    }

    /**
     * @param raw the raw rounds' median, records per second
     * @param fenced the fenced rounds' median
     * @param pairRatio the median of the pairs' ratios (fenced over raw, each pair run back to back)
     */
    record Result(String name, double raw, double fenced, double pairRatio) {
        /** The ratio the benchmarks report: {@link #pairRatio}. */
        double ratio() {
            return pairRatio;
        }

        /** The ratio of the medians, printed beside it. */
        double ratioOfMedians() {
            return fenced / raw;
        }
    }

    private KafkaRounds() {}

    static Result compare(String name, int rounds, Round raw, Round fenced) {
        System.err.printf(Locale.ROOT, "%s: warm-up%n", name);
        raw.recordsPerSecond();
        fenced.recordsPerSecond();
        List<Double> raws = new ArrayList<>();
        List<Double> fenceds = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            if (i % 2 == 0) {
                raws.add(raw.recordsPerSecond());
                fenceds.add(fenced.recordsPerSecond());
            } else {
                fenceds.add(fenced.recordsPerSecond());
                raws.add(raw.recordsPerSecond());
            }
            System.err.printf(
                    Locale.ROOT,
                    "%s round %d/%d: raw %,.0f records/s, fenced %,.0f records/s%n",
                    name,
                    i + 1,
                    rounds,
                    raws.get(i),
                    fenceds.get(i));
        }
        List<Double> pairs = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            pairs.add(fenceds.get(i) / raws.get(i));
        }
        return new Result(name, median(raws), median(fenceds), median(pairs));
    }

    /**
     * The medians as records per second and as nanoseconds per record, the pairs' median ratio (what the ratio
     * lines print) and the ratio of the medians; the last column is what the fenced side adds to each record
     * (negative: it was faster), from the medians.
     */
    static void printTable(PrintStream out, List<Result> results) {
        out.printf(
                Locale.ROOT,
                "| %-40s | %13s | %16s | %5s | %9s | %10s | %13s | %11s |%n",
                "case",
                "raw records/s",
                "fenced records/s",
                "ratio",
                "of medians",
                "raw ns/rec",
                "fenced ns/rec",
                "added ns/rec");
        out.printf(
                Locale.ROOT,
                "|%s|%s|%s|%s|%s|%s|%s|%s|%n",
                "-".repeat(42),
                "-".repeat(15),
                "-".repeat(18),
                "-".repeat(7),
                "-".repeat(11),
                "-".repeat(12),
                "-".repeat(15),
                "-".repeat(13));
        for (Result r : results) {
            double rawNs = 1e9 / r.raw();
            double fencedNs = 1e9 / r.fenced();
            out.printf(
                    Locale.ROOT,
                    "| %-40s | %,13.0f | %,16.0f | %5.2f | %9.2f | %,10.0f | %,13.0f | %,11.0f |%n",
                    r.name(),
                    r.raw(),
                    r.fenced(),
                    r.ratio(),
                    r.ratioOfMedians(),
                    rawNs,
                    fencedNs,
                    fencedNs - rawNs);
        }
        out.println("(alternating rounds after one warm-up pair, fresh consumer group each round; ratio: the median of"
                + " each pair's fenced/raw, beside the ratio of the two medians)");
    }

    static double count(SimpleMeterRegistry registry, String name) {
        return registry.find(name).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    /** Waits until {@code count} reaches {@code target}, checking every millisecond; fails if the consumer stops. */
    static void awaitCount(Supplier<Double> count, long target, CompletableFuture<Void> stopped) {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (count.get() < target) {
            if (stopped.isDone()) {
                try {
                    stopped.get();
                } catch (ExecutionException e) {
                    throw new IllegalStateException("fenced consumer failed", e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
                throw new IllegalStateException("fenced consumer stopped at " + count.get() + " of " + target);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out at " + count.get() + " of " + target);
            }
            try {
                stopped.get(1, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // not done yet: poll the count again
            } catch (ExecutionException e) {
                throw new IllegalStateException("fenced consumer failed", e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
