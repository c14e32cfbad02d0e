package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.LockAcquisitionException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.data.ACL;
import org.junit.jupiter.api.Test;

/** No server needed: a Curator client does not connect until it is used. */
class FencedLocksBuilderTest {

    @Test
    void refusesAClientThatIsNotStarted() {
        CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1));
        assertThatThrownBy(() -> FencedLocks.builder(client))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LATENT");
        assertThatThrownBy(() -> FencedLocks.builder(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void anAcquireWithoutZooKeeperFailsNamingTheAddress() {
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString("127.0.0.1:1")
                .connectionTimeoutMs(200)
                .retryPolicy(new RetryOneTime(1))
                .build()) {
            client.start();
            try (FencedLocks locks = FencedLocks.builder(client).build()) {
                assertThatThrownBy(() -> locks.lock("/locks/orders").tryAcquire(Duration.ofSeconds(5)))
                        .isInstanceOf(LockAcquisitionException.class)
                        .hasMessageContaining(
                                "could not acquire lock /locks/orders: no answer from ZooKeeper at" + " 127.0.0.1:1");
            }
        }
    }

    @Test
    void refusesBadSettingsAtOnceNamingTheValue() {
        try (CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1))) {
            client.start();
            FencedLocks.Builder builder = FencedLocks.builder(client);
            assertThatThrownBy(() -> builder.pauseTolerance(Duration.ofMillis(5)))
                    .hasMessageContaining("PT0.005S");
            // too long to count in nanoseconds: build() failed with "long overflow", naming nothing
            assertThatThrownBy(() -> builder.pauseTolerance(Duration.ofDays(365L * 300)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pauseTolerance")
                    .hasMessageContaining("PT2628000H");
            assertThatThrownBy(() -> builder.sequenceWrapMargin(-1)).hasMessageContaining("-1");
            assertThatThrownBy(() -> builder.acl(List.of())).hasMessageContaining("acl must not be empty");
            // a null entry (an ACL list built from configuration) failed with a NullPointerException without a message
            List<ACL> withNull =
                    new ArrayList<>(ZooKeeperDigest.of("orders", "secret").acl());
            withNull.add(null);
            assertThatThrownBy(() -> builder.acl(withNull))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessageContaining("acl entry 1 (of 2) is null");
            assertThatThrownBy(() -> builder.tokenSource(null)).isInstanceOf(NullPointerException.class);
        }
    }

    /**
     * The guard refuses a grant whose sequence is above {@code Integer.MAX_VALUE - margin}, and a lock's first
     * node has sequence 1 (its parent's marker took 0): a margin of {@code Integer.MAX_VALUE} refused every
     * grant of every lock, each acquire creating a node and failing as if the counter were used up.
     */
    @Test
    void refusesAWrapMarginThatLeavesNoSequenceForAnyGrant() {
        try (CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1))) {
            client.start();
            FencedLocks.Builder builder = FencedLocks.builder(client);
            assertThatThrownBy(() -> builder.sequenceWrapMargin(Integer.MAX_VALUE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("2147483647")
                    .hasMessageContaining("2147483646");
            builder.sequenceWrapMargin(Integer.MAX_VALUE - 1); // the first grant of a fresh lock only, for a test
        }
    }
}
