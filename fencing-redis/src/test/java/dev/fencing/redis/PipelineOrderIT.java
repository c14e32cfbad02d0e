package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.ReadFrom;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.masterreplica.MasterReplica;
import io.lettuce.core.masterreplica.StatefulRedisMasterReplicaConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Writes pipelined on one connection run in the order sent, also when Redis lost its script cache (a restart, a
 * failover, {@code SCRIPT FLUSH}): a write answered {@code NOSCRIPT} after writes sent behind it had run is not
 * applied ({@link ScriptCacheLostException}) rather than sent again as {@code EVAL} after them; one with nothing
 * behind it is sent again and applies.
 */
class PipelineOrderIT {
    @Test
    void aWriteAnsweredNoscriptAfterAWriteBehindItRanIsNotAppliedAndTheOrderSentHolds() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build();
                RedisFixture redis = new RedisFixture(server)) {
            FencedRedis writer = redis.fenced(FencePolicy.MONOTONIC);
            String key = redis.key("k");
            redis.plain.scriptFlush();
            writer.set(key, "a", 6); // Redis has the set script again, not the delete script
            redis.connection.setAutoFlushCommands(false);
            CompletableFuture<WriteOutcome> delete =
                    writer.async().tryDelete(key, 6).toCompletableFuture();
            CompletableFuture<WriteOutcome> set =
                    writer.async().trySet(key, "b", 6).toCompletableFuture();
            redis.connection.flushCommands();
            redis.connection.setAutoFlushCommands(true);
            redis.connection.flushCommands();
            assertThat(set.get(10, TimeUnit.SECONDS).isApplied()).isTrue();
            assertThatThrownBy(() -> delete.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(ScriptCacheLostException.class)
                    .hasMessageContaining("DEL of Redis key " + key)
                    .hasMessageContaining("NOT applied");
            // sent delete, then set, under one token: the delete did not run after the set
            assertThat(redis.plain.get(key)).isEqualTo("b");
            assertThat(redis.storedToken(key)).isEqualTo(6);
        }
    }

    @Test
    void aScriptAnsweredNoscriptAfterAWriteBehindItRanIsNotApplied() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build();
                RedisFixture redis = new RedisFixture(server)) {
            FencedRedis writer = redis.fenced(FencePolicy.MONOTONIC);
            String key = redis.key("k");
            writer.set(key, "a", 6);
            redis.plain.scriptFlush();
            writer.set(key, "a", 6);
            FencedScript delete = FencedScript.of("return redis.call('DEL', KEYS[1])");
            redis.connection.setAutoFlushCommands(false);
            CompletableFuture<WriteOutcome> deleted =
                    writer.async().tryEval(delete, List.of(key), List.of(), 6).toCompletableFuture();
            CompletableFuture<WriteOutcome> set =
                    writer.async().trySet(key, "b", 6).toCompletableFuture();
            redis.connection.flushCommands();
            redis.connection.setAutoFlushCommands(true);
            redis.connection.flushCommands();
            assertThat(set.get(10, TimeUnit.SECONDS).isApplied()).isTrue();
            assertThatThrownBy(() -> deleted.get(10, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(ScriptCacheLostException.class)
                    .hasMessageContaining("EVAL of Redis key " + key);
            assertThat(redis.plain.get(key)).isEqualTo("b");
        }
    }

    @Test
    void aWriteAnsweredNoscriptWithNothingBehindItIsSentAgainAndApplies() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build();
                RedisFixture redis = new RedisFixture(server)) {
            FencedRedis writer = redis.fenced(FencePolicy.MONOTONIC);
            String key = redis.key("k");
            writer.set(key, "a", 6);
            redis.plain.scriptFlush();
            redis.connection.setAutoFlushCommands(false);
            CompletableFuture<WriteOutcome> delete =
                    writer.async().tryDelete(key, 6).toCompletableFuture();
            redis.connection.flushCommands();
            redis.connection.setAutoFlushCommands(true);
            redis.connection.flushCommands();
            assertThat(delete.get(10, TimeUnit.SECONDS).isApplied()).isTrue();
            assertThat(redis.plain.get(key)).isNull();
            // the blocking API: each write answered NOSCRIPT is sent again and applies
            redis.plain.scriptFlush();
            assertThat(writer.trySet(key, "c", 7).isApplied()).isTrue();
            redis.plain.scriptFlush();
            assertThat(writer.tryIncrementBy(redis.key("n"), 2, 0, 7).isApplied())
                    .isTrue();
            assertThat(redis.plain.get(key)).isEqualTo("c");
            assertThat(redis.storedToken(key)).isEqualTo(7);
        }
    }

    /**
     * A pipeline that never drains: two writes in flight, each write's outcome sending the next (a retry, or new
     * work). After a {@code SCRIPT FLUSH} every write's {@code NOSCRIPT} comes back after the next one was sent, so
     * none may be sent again as {@code EVAL}; if nothing else loads the script, every retry is answered {@code
     * NOSCRIPT} again, and the writer fails for good although Redis is healthy.
     */
    @Test
    void aPipelineKeptFullAfterAScriptFlushFailsOnlyTheWritesAlreadySentInsteadOfEveryWriteForGood() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build();
                RedisFixture redis = new RedisFixture(server)) {
            FencedRedis writer = redis.fenced(FencePolicy.STRICT);
            writer.set(redis.key("warm"), "v", 1);
            redis.plain.scriptFlush();
            int writes = 20;
            Map<Integer, Object> results = pipelineKeptTwoDeep(writer, redis.connection, redis::key, writes);

            List<Integer> lost = new ArrayList<>();
            for (int i = 0; i < writes; i++) {
                Object result = results.get(i);
                if (result instanceof ScriptCacheLostException) {
                    lost.add(i);
                } else {
                    assertThat(result).as("write %d", i).isEqualTo(new WriteOutcome.Applied(1, 0, null));
                }
            }
            // the two writes sent before Redis had the script again fail, NOT applied; the rest apply
            assertThat(lost).containsExactly(0, 1);
            assertThat(redis.plain.get(redis.key("k0"))).isNull();
            assertThat(redis.plain.get(redis.key("k" + (writes - 2)))).isEqualTo("v");
        }
    }

    /**
     * The same pipeline over a primary and its replica, with Lettuce reading from the replica: the script must be
     * loaded again on the primary, where the writes run, although Lettuce counts {@code SCRIPT} among the read-only
     * commands it sends to a replica.
     */
    @Test
    void aPipelineKeptFullOnAConnectionReadingFromReplicasAppliesAgainAfterTheWritesAlreadySent() throws Exception {
        try (EmbeddedRedisServer primary = EmbeddedRedisServer.builder().build();
                EmbeddedRedisServer replica = EmbeddedRedisServer.builder()
                        .setting("replicaof", "127.0.0.1 " + primary.port())
                        .build();
                RedisFixture onPrimary = new RedisFixture(primary)) {
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> onPrimary.plain.info("replication").contains("connected_slaves:1"));
            StatefulRedisMasterReplicaConnection<String, String> connection =
                    MasterReplica.connect(onPrimary.client, StringCodec.UTF8, RedisURI.create(primary.uri()));
            try {
                connection.setReadFrom(ReadFrom.REPLICA);
                FencedRedis writer = FencedRedis.builder(connection).build();
                writer.set(onPrimary.key("warm"), "v", 1);
                onPrimary.plain.scriptFlush();
                int writes = 20;
                Map<Integer, Object> results = pipelineKeptTwoDeep(writer, connection, onPrimary::key, writes);

                List<Integer> lost = new ArrayList<>();
                for (int i = 0; i < writes; i++) {
                    if (results.get(i) instanceof ScriptCacheLostException) {
                        lost.add(i);
                    } else {
                        assertThat(results.get(i)).as("write %d", i).isEqualTo(new WriteOutcome.Applied(1, 0, null));
                    }
                }
                assertThat(lost).containsExactly(0, 1);
            } finally {
                connection.close();
            }
        }
    }

    /**
     * A cluster whose nodes' script caches differ (one node's flushed, or a replica promoted that never ran the
     * scripts): each write to that node answered {@code NOSCRIPT} after a write to the other node was sent behind
     * it may not be sent again as {@code EVAL}, and the other node never answers {@code NOSCRIPT}, so no {@code
     * EVAL} ever reloads the script there. Unless the failed write's script is loaded on its node, every write to it
     * fails for good.
     */
    @Test
    void writesToAClusterNodeThatLostItsScriptsApplyAgainAfterTheFirstFailsWhileWritesToAnotherNodeGoOn()
            throws Exception {
        int half = SlotHash.SLOT_COUNT / 2;
        try (TwoNodeCluster cluster = TwoNodeCluster.start(half)) {
            RedisCommands<String, String> nodeA = cluster.nodeA;
            StatefulRedisClusterConnection<String, String> connection = cluster.client.connect();
            FencedRedis writer = FencedRedis.builder(connection).build();
            String onA = keyInSlots(0, half);
            String onB = keyInSlots(half, SlotHash.SLOT_COUNT);
            writer.set(onA, "v", 1);
            writer.set(onB, "v", 1);
            nodeA.scriptFlush(); // B keeps its scripts

            List<Object> writesToA = new ArrayList<>();
            for (long token = 2; token <= 6; token++) {
                // a write to A, and one to B sent behind it before A's NOSCRIPT comes back
                connection.setAutoFlushCommands(false);
                CompletableFuture<WriteOutcome> toA =
                        writer.async().trySet(onA, "v" + token, token).toCompletableFuture();
                CompletableFuture<WriteOutcome> toB =
                        writer.async().trySet(onB, "v" + token, token).toCompletableFuture();
                connection.flushCommands();
                connection.setAutoFlushCommands(true);
                assertThat(toB.get(10, TimeUnit.SECONDS)).isEqualTo(new WriteOutcome.Applied(token, token - 1, null));
                writesToA.add(toA.handle((outcome, failure) -> failure == null ? outcome : cause(failure))
                        .get(10, TimeUnit.SECONDS));
            }
            assertThat(writesToA.get(0)).isInstanceOf(ScriptCacheLostException.class);
            // the write sent behind it went to B, another node: the message must not say it ran on the same connection
            assertThat(((Throwable) writesToA.get(0)).getMessage())
                    .doesNotContain("same connection")
                    .contains("on a Redis Cluster they may have gone to another node");
            // the first write failed, NOT applied: A's token stayed 1 and the next write finds the script
            assertThat(writesToA.subList(1, writesToA.size()))
                    .containsExactly(
                            new WriteOutcome.Applied(3, 1, null),
                            new WriteOutcome.Applied(4, 3, null),
                            new WriteOutcome.Applied(5, 4, null),
                            new WriteOutcome.Applied(6, 5, null));
            assertThat(nodeA.get(onA)).isEqualTo("v6");
        }
    }

    /**
     * A slot moved to a node that never ran the scripts, behind the client's back (a resharding onto a new node the
     * client's topology has not caught up with): Lettuce still routes the slot to its old node and follows each
     * {@code MOVED}, so each write to it is answered {@code NOSCRIPT} by the new node. A write answered so after a
     * write to the old node was sent behind it may not be sent again as {@code EVAL}; its script must then be loaded
     * on the node that answered, not on the one the client's stale topology names, or every write to the slot fails
     * for good. Held here by a client without adaptive topology refresh (with it, Lettuce catches up after a while,
     * and the writes sent meanwhile fail).
     */
    @Test
    void writesToASlotMovedToANodeWithoutTheScriptsApplyAgainAfterTheFirstFailsWhileWritesToTheOldNodeGoOn()
            throws Exception {
        try (TwoNodeCluster cluster = TwoNodeCluster.start(SlotHash.SLOT_COUNT)) {
            RedisCommands<String, String> nodeA = cluster.nodeA;
            RedisCommands<String, String> nodeB = cluster.nodeB;
            cluster.client.setOptions(ClusterClientOptions.builder()
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .disableAllAdaptiveRefreshTriggers()
                            .build())
                    .build());
            StatefulRedisClusterConnection<String, String> connection = cluster.client.connect();
            FencedRedis writer = FencedRedis.builder(connection).build();
            String moved = keyInSlots(0, SlotHash.SLOT_COUNT);
            String stays = "{stays}:state";
            writer.set(moved, "v", 1);
            writer.set(stays, "v", 1);

            // the slot moves to B with its key; B never ran a script, and the client still routes the slot to A
            int slot = SlotHash.getSlot(moved);
            cluster.moveSlotToB(slot);

            List<Object> writesToMoved = new ArrayList<>();
            for (long token = 2; token <= 6; token++) {
                // a write to the moved slot, and one to A sent behind it before B's NOSCRIPT comes back
                connection.setAutoFlushCommands(false);
                CompletableFuture<WriteOutcome> toMoved =
                        writer.async().trySet(moved, "v" + token, token).toCompletableFuture();
                CompletableFuture<WriteOutcome> toA =
                        writer.async().trySet(stays, "v" + token, token).toCompletableFuture();
                // flushing on again first: the write Lettuce redirects to B after A's MOVED is not held back
                connection.setAutoFlushCommands(true);
                connection.flushCommands();
                assertThat(toA.get(10, TimeUnit.SECONDS)).isEqualTo(new WriteOutcome.Applied(token, token - 1, null));
                writesToMoved.add(toMoved.handle((outcome, failure) -> failure == null ? outcome : cause(failure))
                        .get(10, TimeUnit.SECONDS));
            }
            assertThat(writesToMoved.get(0)).isInstanceOf(ScriptCacheLostException.class);
            // the first write failed, NOT applied: the moved key's token stayed 1 and the next write finds the script
            assertThat(writesToMoved.subList(1, writesToMoved.size()))
                    .containsExactly(
                            new WriteOutcome.Applied(3, 1, null),
                            new WriteOutcome.Applied(4, 3, null),
                            new WriteOutcome.Applied(5, 4, null),
                            new WriteOutcome.Applied(6, 5, null));
            assertThat(nodeB.get(moved)).isEqualTo("v6");
        }
    }

    /**
     * Sends {@code writes} sets (key {@code key.apply("k" + i)}, token 1) with two always in flight: the first two
     * together, then one more from each outcome's callback. Returns each write's outcome, or its failure.
     */
    private static Map<Integer, Object> pipelineKeptTwoDeep(
            FencedRedis writer, StatefulConnection<String, String> connection, UnaryOperator<String> key, int writes)
            throws InterruptedException {
        ConcurrentHashMap<Integer, Object> results = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(writes);
        AtomicInteger next = new AtomicInteger();
        Runnable[] sendNext = new Runnable[1];
        sendNext[0] = () -> {
            int i = next.getAndIncrement();
            if (i < writes) {
                writer.async().trySet(key.apply("k" + i), "v", 1).whenComplete((outcome, failure) -> {
                    results.put(i, failure == null ? outcome : cause(failure));
                    done.countDown();
                    sendNext[0].run();
                });
            }
        };
        connection.setAutoFlushCommands(false);
        sendNext[0].run();
        sendNext[0].run();
        connection.setAutoFlushCommands(true);
        connection.flushCommands();
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        return results;
    }

    /** A key with a hash tag whose slot lies in {@code from..to-1}. */
    private static String keyInSlots(int from, int to) {
        for (int i = 0; ; i++) {
            String key = "{node-" + i + "}:state";
            int slot = SlotHash.getSlot(key);
            if (slot >= from && slot < to) {
                return key;
            }
        }
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}
