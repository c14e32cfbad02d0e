package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A connection whose command timeout is zero, which Lettuce reads as no timeout (its own blocking commands
 * wait for the reply, and it never expires a command; {@code spring.data.redis.timeout=0} makes one). The
 * fenced writer waits as Lettuce does: a zero timeout is not a deadline already passed, which would skip the
 * eviction check at build and report every applied write as unknown. Each test holds the server's answers
 * back for a moment, so that the writer waits for them. On a server of its own, whose memory settings the test
 * changes.
 */
class NoCommandTimeoutIT {
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

    @BeforeEach
    void noTimeout() {
        redis.connection.setTimeout(Duration.ZERO);
    }

    @AfterEach
    void evictionOff() {
        redis.plain.configSet("maxmemory-policy", "noeviction");
    }

    /**
     * The next commands are answered only after the writer has started waiting: {@code CLIENT PAUSE}, from a
     * connection of its own, holds every client's commands for a moment.
     */
    private static void pauseServer() {
        try (StatefulRedisConnection<String, String> pausing = redis.client.connect()) {
            assertThat(pausing.sync().clientPause(300)).isEqualTo("OK");
        }
    }

    @Test
    void aServerThatEvictsAnyKeyIsStillRefusedAtBuild() {
        redis.plain.configSet("maxmemory-policy", "allkeys-lru");
        pauseServer();

        assertThatThrownBy(() -> FencedRedis.builder(redis.connection).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("maxmemory-policy allkeys-lru");
    }

    @Test
    void aBlockingWriteWaitsForItsOutcomeInsteadOfReportingItUnknown() {
        FencedRedis fenced = FencedRedis.builder(redis.connection).build();
        String key = redis.key("order");
        pauseServer();

        assertThat(fenced.trySet(key, "by-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null));
        fenced.set(key, "by-8", 8);
        assertThat(fenced.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.get(key)).isEqualTo("by-8");
    }

    /** Lettuce never times a WAIT out on such a connection: any WAIT timeout is shorter than none. */
    @Test
    void aWaitForReplicasIsAcceptedAndTheWriteWaitsForItsAnswer() {
        FencedRedis waiting = FencedRedis.builder(redis.connection)
                .waitForReplicas(1, Duration.ofMillis(100))
                .build();
        String key = redis.key("waited");
        pauseServer();

        assertThat(waiting.trySet(key, "by-3", 3)).isEqualTo(new WriteOutcome.Applied(3, 0, null, 0));
    }

    /**
     * Nothing bounds a WAIT timeout on such a connection but Redis itself, which refuses one that overflows its
     * clock ("timeout is out of range") after the write it follows has applied: every write would then be applied
     * and reported failed. A timeout beyond a long of milliseconds would not even reach Redis.
     */
    @Test
    void aWaitTimeoutRedisCannotTakeIsRefusedNamingIt() {
        Duration beyondRedis = Duration.ofMillis(Long.MAX_VALUE);
        Duration beyondMillis = Duration.ofSeconds(Long.MAX_VALUE);

        assertThatThrownBy(() -> FencedRedis.builder(redis.connection).waitForReplicas(1, beyondRedis))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WAIT timeout")
                .hasMessageContaining(beyondRedis.toString());
        assertThatThrownBy(() -> FencedRedis.builder(redis.connection).waitForReplicas(1, beyondMillis))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WAIT timeout")
                .hasMessageContaining(beyondMillis.toString());
        assertThat(FencedRedis.builder(redis.connection)
                        .waitForReplicas(1, Duration.ofDays(365 * 100))
                        .build())
                .isNotNull();
    }
}
