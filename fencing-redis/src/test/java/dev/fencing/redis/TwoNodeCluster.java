package dev.fencing.redis;

import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.stream.IntStream;

/**
 * A real two-node Redis Cluster of embedded servers, A and B, each a primary: A serves the slots below a split, B
 * the others. Plain commands to each node, and a cluster client that starts from A.
 */
final class TwoNodeCluster implements AutoCloseable {
    final EmbeddedRedisServer a;
    final EmbeddedRedisServer b;
    final RedisCommands<String, String> nodeA;
    final RedisCommands<String, String> nodeB;
    final RedisClusterClient client;
    private final RedisClient plain;

    /** Connects to both nodes; if that fails, shuts the clients made so far down (the caller closes the nodes). */
    private TwoNodeCluster(EmbeddedRedisServer a, EmbeddedRedisServer b) {
        this.a = a;
        this.b = b;
        this.plain = RedisClient.create();
        RedisClusterClient clusterClient = null;
        try {
            clusterClient = RedisClusterClient.create(RedisURI.create(a.uri()));
            this.nodeA = plain.connect(RedisURI.create(a.uri())).sync();
            this.nodeB = plain.connect(RedisURI.create(b.uri())).sync();
        } catch (RuntimeException | Error e) {
            try {
                if (clusterClient != null) {
                    clusterClient.shutdown();
                }
            } finally {
                plain.shutdown();
            }
            throw e;
        }
        this.client = clusterClient;
    }

    /**
     * Starts both nodes and waits until each sees the cluster ok and the other node.
     *
     * @param firstSlotOfB A serves the slots below it, B the rest ({@link SlotHash#SLOT_COUNT}: A serves all)
     */
    static TwoNodeCluster start(int firstSlotOfB) {
        EmbeddedRedisServer a = clusterNode();
        EmbeddedRedisServer b = null;
        TwoNodeCluster cluster = null;
        try {
            b = clusterNode();
            cluster = new TwoNodeCluster(a, b);
            RedisCommands<String, String> nodeA = cluster.nodeA;
            RedisCommands<String, String> nodeB = cluster.nodeB;
            nodeA.clusterAddSlots(IntStream.range(0, firstSlotOfB).toArray());
            if (firstSlotOfB < SlotHash.SLOT_COUNT) {
                nodeB.clusterAddSlots(
                        IntStream.range(firstSlotOfB, SlotHash.SLOT_COUNT).toArray());
            }
            nodeA.clusterMeet("127.0.0.1", b.port());
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> nodeA.clusterInfo().contains("cluster_state:ok")
                            && nodeB.clusterInfo().contains("cluster_state:ok")
                            && nodeB.clusterNodes().contains(nodeA.clusterMyId())
                            && nodeA.clusterNodes().contains(nodeB.clusterMyId()));
            return cluster;
        } catch (RuntimeException | Error e) {
            if (cluster != null) {
                cluster.close();
            } else {
                if (b != null) {
                    b.close();
                }
                a.close();
            }
            throw e;
        }
    }

    /**
     * Moves {@code slot} with its keys from A to B, as a resharding does, telling only the two nodes: a client
     * that has not refreshed its topology still routes the slot to A and follows A's {@code MOVED}.
     */
    void moveSlotToB(int slot) {
        String idA = nodeA.clusterMyId();
        String idB = nodeB.clusterMyId();
        nodeB.clusterSetSlotImporting(slot, idA);
        nodeA.clusterSetSlotMigrating(slot, idB);
        nodeA.migrate("127.0.0.1", b.port(), 0, 5000, MigrateArgs.Builder.keys(nodeA.clusterGetKeysInSlot(slot, 1000)));
        nodeA.clusterSetSlotNode(slot, idB);
        nodeB.clusterSetSlotNode(slot, idB);
    }

    private static EmbeddedRedisServer clusterNode() {
        return EmbeddedRedisServer.builder().setting("cluster-enabled", "yes").build();
    }

    @Override
    public void close() {
        try {
            try {
                client.shutdown();
            } finally {
                plain.shutdown();
            }
        } finally {
            try {
                b.close();
            } finally {
                a.close();
            }
        }
    }
}
