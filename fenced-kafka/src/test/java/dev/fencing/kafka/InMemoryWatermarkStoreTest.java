package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

class InMemoryWatermarkStoreTest {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void remembersOffsetsAndWatermarksPerGroupAndPartition() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        assertThat(store.load("g", P0)).isEqualTo(PartitionState.EMPTY);

        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 10, Map.of(key("a"), 5L))));

        PartitionState state = store.load("g", P0);
        assertThat(state.nextOffset()).isEqualTo(10);
        assertThat(state.watermarks()).containsExactly(Map.entry(key("a"), 5L));
        assertThat(store.load("other-group", P0)).isEqualTo(PartitionState.EMPTY);
        assertThat(store.load("g", new TopicPartition("orders", 1))).isEqualTo(PartitionState.EMPTY);
    }

    @Test
    void neverLowersAWatermark() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 9L))));

        store.commit("g", tx -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 4L))));

        assertThat(store.load("g", P0).watermarks()).containsEntry(key("a"), 9L);
    }

    @Test
    void refusesABatchFromAConsumerThatLoadedAnOlderOffset() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 10, Map.of())));

        // a zombie that loaded the partition before offset 10 was stored
        assertThatThrownBy(
                        () -> store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 4, Map.of(key("a"), 1L)))))
                .isInstanceOf(StalePartitionStateException.class)
                .hasMessageContaining("expected stored offset -1 but found 10");

        assertThat(store.load("g", P0).nextOffset()).isEqualTo(10);
        assertThat(store.size()).isZero();
    }
}
