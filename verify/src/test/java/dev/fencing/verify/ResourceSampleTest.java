package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ResourceSampleTest {
    private static final long MB = 1 << 20;

    @Test
    void aWriterHeapThatKeepsGrowingToTheEndFailsTheRunNamingItWhileAWarmUpOrAShortRunDoesNot() {
        List<ResourceSample> leaking = samples(new long[] {20, 30, 60, 90, 120, 150, 180});
        List<ResourceSample> warmingUp = samples(new long[] {20, 60, 64, 62, 63, 64, 63});
        List<ResourceSample> short_ = samples(new long[] {20, 200, 400});

        assertThat(ResourceSample.unboundedGrowth(leaking)).hasValueSatisfying(line -> assertThat(line)
                .contains("writers heap MB from at most 60 in the first half to 180")
                .doesNotContain("coordinator")
                .doesNotContain("threads"));
        assertThat(ResourceSample.unboundedGrowth(warmingUp)).isEmpty();
        assertThat(ResourceSample.unboundedGrowth(short_))
                .as("fewer than %d samples are not judged", ResourceSample.MIN_SAMPLES_FOR_GROWTH)
                .isEmpty();
    }

    @Test
    void aSampleDescribesEachKindForTheRunsLog() {
        ResourceSample sample = new ResourceSample(
                0, new ResourceUse(190 * MB, 295, 214), new ResourceUse(17 * MB, 169, 25), ResourceUse.NONE);
        assertThat(sample.describe())
                .isEqualTo("coordinator heap 190 MB, 295 fds, 214 threads; writers max heap 17 MB, 169 fds, 25 threads;"
                        + " consumers max heap 0 MB, 0 fds, 0 threads");
    }

    @Test
    void descriptorsAndThreadsThatGrowByLessThanTheirFloorAreNotGrowthEvenIfTheyDoubled() {
        List<ResourceSample> samples = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            ResourceUse few = new ResourceUse(10 * MB, 10 + 10L * i, 5 + 5L * i);
            samples.add(new ResourceSample(i, few, few, few));
        }
        ResourceUse many = new ResourceUse(10 * MB, 200, 100);
        List<ResourceSample> grown = new ArrayList<>(samples);
        grown.add(new ResourceSample(6, many, ResourceUse.NONE, ResourceUse.NONE));

        assertThat(ResourceSample.unboundedGrowth(samples)).isEmpty();
        assertThat(ResourceSample.unboundedGrowth(grown)).hasValueSatisfying(line -> assertThat(line)
                .contains("coordinator file descriptors from at most 30 in the first half to 200")
                .contains("coordinator threads from at most 15 in the first half to 100"));
    }

    @Test
    void thisProcessCountsItsOwnDescriptorsAndThreadsFromProc() {
        ResourceUse self = ResourceUse.self();

        assertThat(self.heapBytes()).isPositive();
        assertThat(self.threads()).isGreaterThanOrEqualTo(Thread.activeCount());
        assertThat(self.fds()).isPositive();
    }

    private static List<ResourceSample> samples(long[] writerHeapMb) {
        List<ResourceSample> samples = new ArrayList<>();
        ResourceUse steady = new ResourceUse(100 * MB, 100, 50);
        for (int i = 0; i < writerHeapMb.length; i++) {
            samples.add(new ResourceSample(i, steady, new ResourceUse(writerHeapMb[i] * MB, 40, 20), ResourceUse.NONE));
        }
        return samples;
    }
}
