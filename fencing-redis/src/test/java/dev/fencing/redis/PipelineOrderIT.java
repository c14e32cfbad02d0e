package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The documented limit of pipelining (see {@link FencedRedisAsync}): writes pipelined on one connection run in the
 * order sent while Redis has the fence scripts cached, but one answered {@code NOSCRIPT} (after a restart, a
 * failover, a {@code SCRIPT FLUSH}) is sent again as {@code EVAL} after the writes pipelined behind it have run.
 */
class PipelineOrderIT {
    @Test
    void aWriteAnsweredNoscriptRunsAfterTheWritesPipelinedBehindIt() throws Exception {
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
            assertThat(delete.get(10, TimeUnit.SECONDS).isApplied()).isTrue();
            assertThat(set.get(10, TimeUnit.SECONDS).isApplied()).isTrue();
            // sent delete, then set, under one token: both applied, the set first, so the key is gone
            assertThat(redis.plain.get(key)).isNull();
            assertThat(redis.storedToken(key)).isEqualTo(6);
        }
    }
}
