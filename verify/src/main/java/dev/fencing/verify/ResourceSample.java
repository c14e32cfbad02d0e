package dev.fencing.verify;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The run's processes at one moment, by kind: the coordinator (with the embedded servers), the largest of the
 * writers and the largest of the consumer members (each measure's maximum over the kind's processes).
 *
 * @param atMillis when, epoch ms
 */
record ResourceSample(long atMillis, ResourceUse coordinator, ResourceUse writers, ResourceUse consumers) {

    /** How many samples a run needs before growth is judged: a run of at least 30 minutes, sampled every 10. */
    static final int MIN_SAMPLES_FOR_GROWTH = 4;

    private static final long HEAP_FLOOR_BYTES = 32L << 20;
    private static final long FDS_FLOOR = 64;
    private static final long THREADS_FLOOR = 32;

    /** "coordinator heap 190 MB, 295 fds, 214 threads; writers max ...; consumers max ...", for a run's log. */
    String describe() {
        return "coordinator " + describe(coordinator) + "; writers max " + describe(writers) + "; consumers max "
                + describe(consumers);
    }

    private static String describe(ResourceUse use) {
        return "heap " + (use.heapBytes() >> 20) + " MB, " + use.fds() + " fds, " + use.threads() + " threads";
    }

    /**
     * What grew without bound, if anything: a measure of a kind whose last sample exceeds the largest of the
     * first half of the samples by more than half of it and more than a floor (32 MB of heap, 64 descriptors, 32
     * threads). A leak keeps growing through the second half; a warm-up or a burst does not carry to the end.
     * Judged only from {@value #MIN_SAMPLES_FOR_GROWTH} samples on.
     */
    static Optional<String> unboundedGrowth(List<ResourceSample> samples) {
        if (samples.size() < MIN_SAMPLES_FOR_GROWTH) {
            return Optional.empty();
        }
        StringBuilder grown = new StringBuilder();
        check(grown, samples, "coordinator", ResourceSample::coordinator);
        check(grown, samples, "writers", ResourceSample::writers);
        check(grown, samples, "consumers", ResourceSample::consumers);
        return grown.isEmpty()
                ? Optional.empty()
                : Optional.of("resources grew without bound over " + samples.size() + " samples:" + grown);
    }

    private static void check(
            StringBuilder grown, List<ResourceSample> samples, String kind, Function<ResourceSample, ResourceUse> of) {
        check(grown, samples, kind + " heap MB", s -> of.apply(s).heapBytes(), HEAP_FLOOR_BYTES, 1 << 20);
        check(grown, samples, kind + " file descriptors", s -> of.apply(s).fds(), FDS_FLOOR, 1);
        check(grown, samples, kind + " threads", s -> of.apply(s).threads(), THREADS_FLOOR, 1);
    }

    private static void check(
            StringBuilder grown,
            List<ResourceSample> samples,
            String what,
            ToLongFunction<ResourceSample> measure,
            long floor,
            long unit) {
        long firstHalf = samples.subList(0, samples.size() / 2).stream()
                .mapToLong(measure)
                .max()
                .orElse(0);
        long last = measure.applyAsLong(samples.get(samples.size() - 1));
        if (last - firstHalf > Math.max(firstHalf / 2, floor)) {
            grown.append(String.format(
                    Locale.ROOT, " %s from at most %d in the first half to %d", what, firstHalf / unit, last / unit));
        }
    }
}
