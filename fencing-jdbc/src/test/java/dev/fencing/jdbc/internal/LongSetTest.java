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

    @Test
    void ascendingValuesAreAllRememberedWhenALaterValueBreaksTheOrder() {
        LongSet set = new LongSet();
        Set<Long> expected = new HashSet<>();
        // a sorted batch of 1,000 keys, zero and a negative among them, then each of them again (refused) and
        // new values below, between and above them
        for (long value = -3; value < 997; value++) {
            assertThat(set.add(value)).isTrue();
            expected.add(value);
        }
        for (long value = 996; value >= -3; value--) {
            assertThat(set.add(value)).as("add(%d) again", value).isFalse();
        }
        for (long value : new long[] {-4, 1_000, 5_000, Long.MIN_VALUE, Long.MAX_VALUE}) {
            assertThat(set.add(value)).as("add(%d)", value).isEqualTo(expected.add(value));
        }
        assertThat(set.add(0)).isFalse();
        assertThat(set.add(-4)).isFalse();
        assertThat(set.size()).isEqualTo(expected.size());
    }

    @Test
    void aValueEqualToTheLastAscendingOneIsRefused() {
        LongSet set = new LongSet();
        assertThat(set.add(7)).isTrue();
        assertThat(set.add(8)).isTrue();
        assertThat(set.add(8)).isFalse();
        assertThat(set.add(7)).isFalse();
        assertThat(set.add(9)).isTrue();
        assertThat(set.size()).isEqualTo(3);
    }
}
