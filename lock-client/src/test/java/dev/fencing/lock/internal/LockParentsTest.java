package dev.fencing.lock.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class LockParentsTest {

    @Test
    void theMarkerAmongTheChildrenNamesTheBase() {
        assertThat(LockParents.base(List.of("_c_a-lock-0000000003", "fencing-base-0")))
                .hasValue(0);
        assertThat(LockParents.base(List.of("fencing-base-4294967300", "_c_a-lock-0000000001")))
                .hasValue(4_294_967_300L);
    }

    @Test
    void aParentWithoutAReadableMarkerHasNoBase() {
        assertThat(LockParents.base(List.of("_c_a-lock-0000000000"))).isEmpty();
        assertThat(LockParents.base(List.of("fencing-base-", "fencing-base-x", "fencing-base--5")))
                .isEmpty();
        assertThat(LockParents.base(List.of())).isEmpty();
    }

    @Test
    void ofSeveralMarkersMadeByHandTheHighestWinsSinceItOnlyRaisesTokens() {
        assertThat(LockParents.base(List.of("fencing-base-7", "fencing-base-100", "fencing-base-0")))
                .hasValue(100);
    }

    @Test
    void theMarkerSortsAfterEveryLockNodeSoCuratorNeverWaitsOnIt() {
        assertThat(LockParents.marker(0)).isGreaterThan("9999999999").isGreaterThan("-000000001");
    }

    @Test
    void theHistoryNodeMirrorsTheLockPath() {
        assertThat(LockParents.historyOf("/locks/sku-42")).isEqualTo("/fencing-lock-history/locks/sku-42");
    }
}
