package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
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
}
