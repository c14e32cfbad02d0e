package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import org.junit.jupiter.api.Test;

/**
 * A real two-node Redis Cluster whose slot moves behind the client's back (resharding, or a failover the client
 * has not seen yet): the fenced write is answered {@code MOVED}, and Lettuce writes the same call to the other
 * node. {@code MOVED} proves that the first sending did not run, so the call is not taken for one sent again: a
 * monotonic write under the same token applies, and a stale strict write is rejected, not reported unknown.
 */
class ClusterRedirectIT {

    @Test
    void aWriteRedirectedByMovedIsDecidedAsAFirstSending() {
        try (TwoNodeCluster cluster = TwoNodeCluster.start(SlotHash.SLOT_COUNT)) {
            RedisCommands<String, String> nodeA = cluster.nodeA;
            RedisCommands<String, String> nodeB = cluster.nodeB;
            StatefulRedisClusterConnection<String, String> connection = cluster.client.connect();
            FencedRedis monotonic = FencedRedis.builder(connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            FencedRedis strict =
                    FencedRedis.builder(connection).policy(FencePolicy.STRICT).build();
            String key = "{moved}:state";
            String other = "{moved}:order";
            assertThat(monotonic.trySet(key, "v1", 5)).isEqualTo(new WriteOutcome.Applied(5, 0, null));
            assertThat(monotonic.trySet(other, "v1", 5)).isEqualTo(new WriteOutcome.Applied(5, 0, null));

            // the slot moves to B with its keys; the client still routes it to A
            int slot = SlotHash.getSlot(key);
            cluster.moveSlotToB(slot);

            assertThat(monotonic.trySet(key, "v2", 5)).isEqualTo(new WriteOutcome.Applied(5, 5, null));
            assertThat(strict.trySet(other, "v0", 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
            assertThat(nodeB.get(key)).isEqualTo("v2");
        }
    }
}
