package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.zookeeper.FenceTokenExhaustedException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
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

    @Test
    void theHistoryRootLetsAnyoneAddHistoriesAndNobodyDeleteThem() {
        Id orders = new Id("digest", "orders:x");
        assertThat(LockParents.historyRootAcl(List.of(new ACL(ZooDefs.Perms.ALL, orders))))
                .containsExactlyInAnyOrder(
                        new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.DELETE, orders),
                        new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.CREATE, ZooDefs.Ids.ANYONE_ID_UNSAFE));
        assertThat(LockParents.historyRootAcl(ZooDefs.Ids.OPEN_ACL_UNSAFE))
                .containsExactly(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.DELETE, ZooDefs.Ids.ANYONE_ID_UNSAFE));
    }

    @Test
    void aRecreatedParentsBaseIsTheStoredBasePlusTwoToThe31() {
        assertThat(LockParents.nextBase("/a", "/h", "0".getBytes(StandardCharsets.US_ASCII), 99))
                .isEqualTo(2_147_483_648L);
        assertThat(LockParents.nextBase("/a", "/h", "2147483648".getBytes(StandardCharsets.US_ASCII), 99))
                .isEqualTo(4_294_967_296L);
    }

    @Test
    void aHistoryWithoutDataStartsAboveItsLastWritesZxidWhichBoundsAnEarlierBuildsBase() {
        assertThat(LockParents.nextBase("/a", "/h", new byte[0], 77)).isEqualTo(77 + 2_147_483_648L);
    }

    @Test
    void anUnreadableStoredBaseFailsClosedNamingTheNodeAndTheValue() {
        for (String bad : List.of("x", "-3", "1.5")) {
            assertThatThrownBy(() -> LockParents.nextBase(
                            "/a", "/fencing-lock-history/a", bad.getBytes(StandardCharsets.US_ASCII), 1))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("/fencing-lock-history/a")
                    .hasMessageContaining("'" + bad + "'");
        }
    }

    @Test
    void aStoredBaseWhoseNextBaseWouldPassLongMaxFailsClosedNamingThePathAndTheValue() {
        long highest = Long.MAX_VALUE - LockParents.INCARNATION_SPAN;
        assertThat(LockParents.nextBase("/a", "/h", Long.toString(highest).getBytes(StandardCharsets.US_ASCII), 1))
                .isEqualTo(Long.MAX_VALUE);
        for (long bad : new long[] {highest + 1, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> LockParents.nextBase(
                            "/locks/a",
                            "/fencing-lock-history/locks/a",
                            Long.toString(bad).getBytes(StandardCharsets.US_ASCII),
                            1))
                    .isInstanceOf(FenceTokenExhaustedException.class)
                    .hasMessageContaining("/locks/a")
                    .hasMessageContaining("/fencing-lock-history/locks/a")
                    .hasMessageContaining(Long.toString(bad));
        }
    }
}
