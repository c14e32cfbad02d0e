package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.kafka.internal.PartitionWatermarks;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

class PartitionWatermarksTest {

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] raw(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }

    private static long current(PartitionWatermarks watermarks, String key) {
        return watermarks.current(watermarks.find(raw(key)));
    }

    @Test
    void aKeyAppliedAheadCoversItsRecordsUpToItsAppliedOffsetAndIsForgottenPastIt() {
        PartitionWatermarks watermarks = PartitionWatermarks.lazy();
        assertThat(watermarks.appliedBefore(raw("a"), 0)).isFalse();
        watermarks.appliedThrough(key("a"), 7);
        watermarks.appliedThrough(key("a"), 5); // a lower one never lowers it
        assertThat(watermarks.appliedBefore(raw("a"), 3)).isTrue();
        assertThat(watermarks.appliedBefore(raw("a"), 7)).isTrue();
        assertThat(watermarks.appliedBefore(raw("b"), 7)).isFalse();
        assertThat(watermarks.appliedBefore(raw("a"), 8)).isFalse();
        // the key's records come in offset order: once past, nothing of it is skipped any more
        assertThat(watermarks.appliedBefore(raw("a"), 7)).isFalse();
    }

    @Test
    void appliedOffsetsAreForgottenOnceTheCommittedOffsetPassesTheHighest() {
        PartitionWatermarks watermarks = PartitionWatermarks.lazy();
        watermarks.appliedThrough(key("a"), 7);
        watermarks.appliedThrough(key("b"), 9);
        watermarks.committedThrough(9);
        assertThat(watermarks.appliedBefore(raw("b"), 9)).isTrue();
        watermarks.committedThrough(10);
        assertThat(watermarks.appliedBefore(raw("b"), 9)).isFalse();
    }

    @Test
    void aCommittedBatchKeepsItsRaisedTokensAndReportsEachKeyOnce() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 6);
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 7);
        watermarks.raise(raw("b"), watermarks.find(raw("b")), 1);
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 7);

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
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 9);
        watermarks.raise(raw("new"), PartitionWatermarks.NONE, 3);

        watermarks.rollback();

        assertThat(current(watermarks, "a")).isEqualTo(5);
        assertThat(current(watermarks, "new")).as("rolled back to none").isZero();
        assertThat(watermarks.size()).isEqualTo(1);
        watermarks.begin();
        assertThat(watermarks.raised()).isEmpty();
    }

    @Test
    void theRaisedNewKeysAreThoseWithoutACommittedWatermark() {
        // given a lazy table that loaded "stored" with a watermark and "absent" without one
        PartitionWatermarks watermarks = PartitionWatermarks.lazy();
        watermarks.load(raw("stored"), 5);
        watermarks.load(raw("absent"), 0);
        watermarks.begin();

        // when a batch raises both and a key it sees first, then one that a rolled-back batch had added
        watermarks.raise(raw("stored"), watermarks.find(raw("stored")), 6);
        watermarks.raise(raw("absent"), watermarks.find(raw("absent")), 6);
        watermarks.raise(raw("first"), PartitionWatermarks.NONE, 6);

        // then the keys without a committed watermark are the new ones
        assertThat(watermarks.raisedNew()).containsExactlyInAnyOrder(key("absent"), key("first"));
        assertThat(watermarks.raisedNew()).contains(key("first")).doesNotContain(key("stored"), key("other"));

        // when it commits, the next batch's raises of the same keys are no longer new
        watermarks.commit();
        watermarks.begin();
        watermarks.raise(raw("absent"), watermarks.find(raw("absent")), 7);
        watermarks.raise(raw("rolled"), PartitionWatermarks.NONE, 7);
        watermarks.rollback();
        watermarks.begin();
        watermarks.raise(raw("absent"), watermarks.find(raw("absent")), 8);
        watermarks.raise(raw("rolled"), watermarks.find(raw("rolled")), 8);
        assertThat(watermarks.raisedNew()).containsExactly(key("rolled"));
    }

    @Test
    void growsPastItsInitialCapacityAndFindsEveryKey() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of());
        watermarks.begin();
        for (int i = 0; i < 10_000; i++) {
            watermarks.raise(raw("k" + i), watermarks.find(raw("k" + i)), i + 1);
        }
        assertThat(watermarks.commit()).isEqualTo(10_000);
        for (int i = 0; i < 10_000; i++) {
            assertThat(current(watermarks, "k" + i)).isEqualTo(i + 1);
        }
        assertThat(watermarks.find(raw("absent"))).isEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.size()).isEqualTo(10_000);
    }

    @Test
    void raisingAKeyInASlotThatHoldsAnotherKeyFailsNamingTheKeyAndTheSlotAndRaisesNothing() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L, key("b"), 6L));
        int slotOfA = watermarks.find(raw("a"));
        watermarks.begin();

        // unguarded, this raised a's watermark to 9 for a record of b
        assertThatThrownBy(() -> watermarks.raise(raw("b"), slotOfA, 9))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("key b was raised in slot " + slotOfA + ", which holds key a: the table changed since"
                        + " its lookup");

        assertThat(current(watermarks, "a")).isEqualTo(5);
        assertThat(current(watermarks, "b")).isEqualTo(6);
        assertThat(watermarks.raised()).isEmpty();
    }

    @Test
    void aSlotFoundBeforeTheTableGrewIsRefusedAsStale() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        int before = watermarks.find(raw("a"));
        watermarks.begin();
        for (int i = 0; i < 100; i++) { // grows the table several times: a moves
            watermarks.raise(raw("k" + i), PartitionWatermarks.NONE, 1);
        }
        int after = watermarks.find(raw("a"));
        assertThat(after).isNotEqualTo(before);

        assertThatThrownBy(() -> watermarks.raise(raw("a"), before, 8))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("key a was raised in slot " + before + ", which holds ");
        assertThat(current(watermarks, "a")).isEqualTo(5);
    }

    @Test
    void raisingAMarkedKeyAsNewFailsRatherThanGivingItTwoMarks() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        int slotOfA = watermarks.find(raw("a"));
        watermarks.begin();

        assertThatThrownBy(() -> watermarks.raise(raw("a"), PartitionWatermarks.NONE, 3))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("key a was raised as new (slot NONE) but has a mark in slot " + slotOfA
                        + ": the table changed since its lookup");
        assertThat(watermarks.slots()).isEqualTo(1);
        assertThatThrownBy(() -> watermarks.raise(null, slotOfA, 3)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aLowerTokenNeverLowersTheWatermark() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 4);
        assertThat(watermarks.raised()).isEmpty();
        assertThat(current(watermarks, "a")).isEqualTo(5);
    }

    @Test
    void aKeyReadInPlaceFromALargerArrayFindsTheSameMarkAsItsCopy() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("order-17"), 5L));
        byte[] fetched = raw("xx-order-17-yy"); // the key sits at offset 3, as in a fetched batch

        int inPlace = watermarks.find(fetched, 3, "order-17".length());

        assertThat(inPlace).isEqualTo(watermarks.find(raw("order-17")));
        assertThat(watermarks.current(inPlace)).isEqualTo(5);
        assertThat(watermarks.find(fetched, 3, "order-1".length()))
                .as("a prefix is another key")
                .isEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.find(fetched, 0, fetched.length)).isEqualTo(PartitionWatermarks.NONE);
    }

    @Test
    void keyTokensKeepTheHighestTokenPerKeyThroughGrowth() {
        dev.fencing.kafka.internal.KeyTokens tokens = new dev.fencing.kafka.internal.KeyTokens();
        for (int i = 0; i < 1_000; i++) {
            tokens.raise(raw("key-" + i), i + 10);
        }
        tokens.raise(raw("key-7"), 3); // lower: ignored
        tokens.raise(raw("key-8"), 500); // higher: kept

        Map<String, Long> held = new java.util.HashMap<>();
        tokens.forEach((key, token) -> held.put(new String(key, StandardCharsets.UTF_8), token));
        assertThat(tokens.size()).isEqualTo(1_000);
        assertThat(held).hasSize(1_000).containsEntry("key-7", 17L).containsEntry("key-8", 500L);
        assertThat(held).containsEntry("key-999", 1_009L);
    }

    @Test
    void aLazyTableLoadsKeysAndEvictsOnlyBetweenBatchesWhenAboveItsBound() {
        PartitionWatermarks watermarks = PartitionWatermarks.lazy();
        assertThat(watermarks.complete()).isFalse();
        watermarks.load(raw("a"), 5);
        watermarks.load(raw("b"), 0); // the store has none for b
        assertThat(current(watermarks, "a")).isEqualTo(5);
        assertThat(watermarks.find(raw("b"))).as("known to have none").isNotEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.size()).isEqualTo(1);

        watermarks.begin();
        watermarks.raise(raw("c"), watermarks.find(raw("c")), 3);
        assertThat(watermarks.evictIfAbove(1, true))
                .as("not while a batch has raised keys")
                .isZero();
        watermarks.commit();
        assertThat(watermarks.evictIfAbove(3, true)).as("within the bound").isZero();

        assertThat(watermarks.evictIfAbove(2, true)).isEqualTo(2);
        assertThat(watermarks.size()).isZero();
        assertThat(watermarks.find(raw("a"))).isEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.complete()).as("with a store: loaded again").isFalse();
    }

    @Test
    void withoutAStoreAnEvictedTableStaysCompleteAndHasForgottenItsKeys() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L, key("b"), 6L));
        assertThat(watermarks.evictIfAbove(1, false)).isEqualTo(2);
        assertThat(watermarks.complete()).isTrue();
        assertThat(current(watermarks, "a")).as("the documented loss").isZero();
    }

    @Test
    void keysLongerThanEightBytesThatShareTheirFirstEightAreToldApart() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("customer-1"), 5L, key("customer-2"), 6L));

        assertThat(current(watermarks, "customer-1")).isEqualTo(5);
        assertThat(current(watermarks, "customer-2")).isEqualTo(6);
        assertThat(watermarks.find(raw("customer-3"))).isEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.find(raw("customer"))).as("its first eight bytes").isEqualTo(PartitionWatermarks.NONE);
        assertThat(watermarks.find(raw("customer-10"))).isEqualTo(PartitionWatermarks.NONE);
    }

    @Test
    void keysRaisedBeforeTheTableGrowsAreCommittedOrRolledBackWithTheirNewSlots() {
        PartitionWatermarks watermarks = new PartitionWatermarks(Map.of(key("a"), 5L));
        watermarks.begin();
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 6);
        for (int i = 0; i < 100; i++) { // grows the table several times
            watermarks.raise(raw("k" + i), PartitionWatermarks.NONE, 1);
        }
        watermarks.rollback();
        assertThat(current(watermarks, "a")).isEqualTo(5);
        assertThat(current(watermarks, "k42")).isZero();

        watermarks.begin();
        watermarks.raise(raw("a"), watermarks.find(raw("a")), 7);
        for (int i = 100; i < 200; i++) {
            watermarks.raise(raw("k" + i), PartitionWatermarks.NONE, 2);
        }
        assertThat(watermarks.raised()).hasSize(101).containsEntry(key("a"), 7L).containsEntry(key("k150"), 2L);
        assertThat(watermarks.commit()).as("new keys").isEqualTo(100);
        assertThat(current(watermarks, "a")).isEqualTo(7);
        assertThat(current(watermarks, "k150")).isEqualTo(2);
        watermarks.begin();
        assertThat(watermarks.raised()).isEmpty();
    }
}
