package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import dev.fencing.testsupport.EmbeddedRedisServer.AppendFsync;
import org.junit.jupiter.api.Test;

/**
 * Tokens are only as durable as Redis makes them: with {@code appendonly yes} and {@code appendfsync
 * always}, every acknowledged token survives a crash (SIGKILL) and restart; without persistence the restart
 * forgets the token and the stale write lands.
 */
class AofRestartIT {

    @Test
    void anAppendOnlyRedisKeepsTokensAcrossACrashSoTheStaleWriteIsStillRefused() {
        try (EmbeddedRedisServer server =
                EmbeddedRedisServer.builder().appendOnly(AppendFsync.ALWAYS).build()) {
            String key = "{aof}:state";
            try (RedisFixture redis = new RedisFixture(server)) {
                FencedRedis fenced = redis.fenced(FencePolicy.STRICT);
                fenced.set(key, "by-7", 7);
                fenced.set(key, "by-8", 8);
            }

            server.kill();
            server.start();

            try (RedisFixture redis = new RedisFixture(server)) {
                FencedRedis fenced = redis.fenced(FencePolicy.STRICT);
                assertThat(fenced.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
                assertThat(redis.plain.get(key)).isEqualTo("by-8");
                redis.plain.set(key, "late-7");
                assertThat(redis.plain.get(key)).isEqualTo("late-7");
            }
        }
    }

    @Test
    void aRedisWithoutPersistenceForgetsTokensOnRestartAndTheStaleWriteLands() {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build()) {
            String key = "{volatile}:state";
            try (RedisFixture redis = new RedisFixture(server)) {
                FencedRedis fenced = redis.fenced(FencePolicy.STRICT);
                fenced.set(key, "by-8", 8);
            }

            server.kill();
            server.start();

            try (RedisFixture redis = new RedisFixture(server)) {
                FencedRedis fenced = redis.fenced(FencePolicy.STRICT);
                assertThat(fenced.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null));
            }
        }
    }
}
