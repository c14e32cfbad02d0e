package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.internal.PartitionWatermarks;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

class PartitionWatermarksTest {

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    private static long current(PartitionWatermarks watermarks, String key) {
        PartitionWatermarks.Mark mark = watermarks.find(key(key));
        return mark == null ? 0 : mark.current();
    }

    @Test
    void aCommittedBatchKeepsItsRaisedTokensAndReportsEachKeyOnce() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(key("a"), watermarks.find(key("a")), 6);
        watermarks.raise(key("a"), watermarks.find(key("a")), 7);
        watermarks.raise(key("b"), watermarks.find(key("b")), 1);
        watermarks.raise(key("a"), watermarks.find(key("a")), 7);

        assertThat(watermarks.raised()).isEqualTo(Map.of(key("a"), 7L, key("b"), 1L));
        assertThat(watermarks.commit()).as("new keys").isEqualTo(1);
        assertThat(current(watermarks, "a")).isEqualTo(7);
        assertThat(current(watermarks, "b")).isEqualTo(1);
        assertThat(watermarks.size()).isEqualTo(2);
    }

    @Test
    void aRolledBackBatchLeavesTheWatermarksAsTheyWere() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(key("a"), watermarks.find(key("a")), 9);
        watermarks.raise(key("new"), null, 3);

        watermarks.rollback();

        assertThat(current(watermarks, "a")).isEqualTo(5);
        assertThat(watermarks.find(key("new"))).isNull();
        assertThat(watermarks.size()).isEqualTo(1);
        watermarks.begin();
        assertThat(watermarks.raised()).isEmpty();
    }

    @Test
    void aLowerTokenNeverLowersTheWatermark() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(key("a"), watermarks.find(key("a")), 4);
        assertThat(watermarks.raised()).isEmpty();
        assertThat(current(watermarks, "a")).isEqualTo(5);
    }
}
