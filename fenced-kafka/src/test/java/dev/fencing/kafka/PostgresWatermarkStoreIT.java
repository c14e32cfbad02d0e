package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresWatermarkStoreIT {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final TopicPartition P1 = new TopicPartition("orders", 1);
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_store_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void savesAndLoadsOffsetsAndWatermarksPerGroupAndPartition() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        assertThat(store.load("g1", P0)).isEqualTo(PartitionState.EMPTY);

        store.commit(
                "g1",
                handle -> List.of(
                        new PartitionProgress(P0, -1, 3, Map.of(key("a"), 5L, key("b"), 6L)),
                        new PartitionProgress(P1, -1, 1, Map.of(Bytes.wrap(new byte[] {0, -1, 7}), 2L))));

        assertThat(store.load("g1", P0)).isEqualTo(new PartitionState(3, Map.of(key("a"), 5L, key("b"), 6L)));
        assertThat(store.load("g1", P1).watermarks()).containsEntry(Bytes.wrap(new byte[] {0, -1, 7}), 2L);
        assertThat(store.load("g2", P0)).isEqualTo(PartitionState.EMPTY);
    }

    @Test
    void neverLowersAWatermarkAndRollsBackTheHandlersWritesWithARefusedBatch() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE IF NOT EXISTS effect (note TEXT)"));
        store.commit("g3", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 9L))));
        store.commit("g3", handle -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 4L))));
        assertThat(store.load("g3", P0).watermarks()).containsEntry(key("a"), 9L);

        // a zombie that loaded offset 1 commits after the owner moved to 2: refused, its write undone
        assertThatThrownBy(() -> store.commit("g3", handle -> {
                    handle.execute("INSERT INTO effect VALUES ('zombie')");
                    return List.of(new PartitionProgress(P0, 1, 5, Map.of(key("a"), 10L)));
                }))
                .isInstanceOf(StalePartitionStateException.class)
                .hasMessageContaining("expected stored offset 1 but found 2");
        int effects = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM effect")
                .mapTo(Integer.class)
                .one());
        assertThat(effects).isZero();
        assertThat(store.load("g3", P0)).isEqualTo(new PartitionState(2, Map.of(key("a"), 9L)));
    }

    @Test
    void oneCommitRaisesKeysItHoldsAndAddsNewOnes() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g4", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 3L, key("b"), 8L))));

        // a raised, b offered lower (kept at 8), c new
        store.commit(
                "g4",
                handle -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 7L, key("b"), 5L, key("c"), 1L))));

        assertThat(store.load("g4", P0))
                .isEqualTo(new PartitionState(2, Map.of(key("a"), 7L, key("b"), 8L, key("c"), 1L)));
    }
}
