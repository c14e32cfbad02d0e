package dev.fencing.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LongSetTest {
    @Test
    void addsEachValueOnceAcrossGrowthLikeAHashSet() {
        LongSet set = new LongSet();
        Set<Long> expected = new HashSet<>();
        Random random = new Random(20);
        for (int i = 0; i < 50_000; i++) {
            // consecutive keys, repeats, zero, negatives and extremes, as batch keys come
            long value =
                    switch (i % 5) {
                        case 0 -> i;
                        case 1 -> random.nextInt(1_000);
                        case 2 -> -random.nextInt(1_000);
                        case 3 -> random.nextLong();
                        default -> i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
                    };
            assertThat(set.add(value)).as("add(%d)", value).isEqualTo(expected.add(value));
        }
        assertThat(set.size()).isEqualTo(expected.size());
        assertThat(set.add(0)).isFalse();
    }
}
