package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A Redis that evicts any key when full ({@code maxmemory-policy allkeys-*}) can evict a token key, and the
 * stale write to its key then lands: shown here on a real server filled until the token key is gone. So a
 * fenced writer refuses such a server at build, naming the policy, unless told to accept it. On a server of
 * its own, whose memory settings the test changes.
 */
class KeyEvictionIT {
    static EmbeddedRedisServer server;
    static RedisFixture redis;

    @BeforeAll
    static void start() {
        server = EmbeddedRedisServer.builder().build();
        redis = new RedisFixture(server);
    }

    @AfterAll
    static void stop() {
        redis.close();
        server.close();
    }

    @Test
    void aServerThatEvictsAnyKeyIsRefusedAtBuildNamingItsPolicy() {
        try {
            for (String policy : new String[] {"allkeys-lru", "allkeys-lfu", "allkeys-random"}) {
                redis.plain.configSet("maxmemory-policy", policy);
                assertThatThrownBy(() -> FencedRedis.builder(redis.connection).build())
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("maxmemory-policy " + policy)
                        .hasMessageContaining("allowKeyEviction");
                assertThat(FencedRedis.builder(redis.connection)
                                .allowKeyEviction(true)
                                .build())
                        .isNotNull();
            }
            for (String policy : new String[] {"noeviction", "volatile-lru", "volatile-ttl"}) {
                redis.plain.configSet("maxmemory-policy", policy);
                assertThat(FencedRedis.builder(redis.connection).build()).isNotNull();
            }
        } finally {
            redis.plain.configSet("maxmemory-policy", "noeviction");
        }
    }

    /**
     * A server that does not answer the check within the connection's command timeout (here: every client's
     * commands held by {@code CLIENT PAUSE}) may be one that evicts any key: the build is refused, naming the
     * timeout, not let through as a server that refused the command is.
     */
    @Test
    void aServerThatDoesNotAnswerTheCheckInTimeIsRefusedAtBuild() {
        Duration timeout = redis.connection.getTimeout();
        redis.plain.configSet("maxmemory-policy", "allkeys-lru");
        try (StatefulRedisConnection<String, String> pausing = redis.client.connect()) {
            redis.connection.setTimeout(Duration.ofMillis(200));
            assertThat(pausing.sync().clientPause(1_500)).isEqualTo("OK");

            assertThatThrownBy(() -> FencedRedis.builder(redis.connection).build())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("did not answer CONFIG GET maxmemory-policy")
                    .hasMessageContaining("PT0.2S");
        } finally {
            redis.connection.setTimeout(timeout);
            redis.plain.configSet("maxmemory-policy", "noeviction");
        }
    }

    /** What the refusal guards against: the token key evicted, and a stale token then accepted. */
    @Test
    void aFullServerThatEvictsAnyKeyForgetsATokenAndTheStaleWriteLands() {
        String key = redis.key("evicted");
        FencedRedis fenced = FencedRedis.builder(redis.connection).build();
        fenced.set(key, "by-8", 8);
        assertThat(fenced.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        long used = Long.parseLong(redis.plain
                .info("memory")
                .lines()
                .filter(line -> line.startsWith("used_memory:"))
                .findFirst()
                .orElseThrow()
                .substring("used_memory:".length())
                .trim());
        try {
            redis.plain.configSet("maxmemory-policy", "allkeys-lru");
            redis.plain.configSet("maxmemory", Long.toString(used + 2 * 1024 * 1024));
            String filler = "x".repeat(4096);
            int written = 0;
            while (redis.plain.exists(FencedRedis.tokenKey(key)) == 1) {
                assertThat(written)
                        .as("filler keys written without evicting the token key")
                        .isLessThan(200_000);
                redis.plain.set(redis.key("filler-" + written++), filler);
            }
            assertThat(written).isPositive();
        } finally {
            redis.plain.configSet("maxmemory", "0");
            redis.plain.configSet("maxmemory-policy", "noeviction");
        }

        assertThat(fenced.trySet(key, "late-7", 7)).isInstanceOf(WriteOutcome.Applied.class);
        assertThat(redis.plain.get(key)).isEqualTo("late-7");
    }
}
