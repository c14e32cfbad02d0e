package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * {@code WAIT} after a fenced write, on a real primary and replica: the outcome says how many replicas had
 * the write. It narrows the window a failover could lose the token in; it does not make the write durable.
 */
class WaitForReplicasIT {

    @Test
    void anAppliedWriteReportsHowManyReplicasHaveItAndIsAppliedEvenWhenNoneDo() {
        try (EmbeddedRedisServer primary = EmbeddedRedisServer.builder().build();
                EmbeddedRedisServer replica = EmbeddedRedisServer.builder()
                        .setting("replicaof", "127.0.0.1 " + primary.port())
                        .build();
                RedisFixture onPrimary = new RedisFixture(primary);
                RedisFixture onReplica = new RedisFixture(replica)) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> onReplica.plain.info("replication").contains("master_link_status:up"));
            FencedRedis waiting = FencedRedis.builder(onPrimary.connection)
                    .waitForReplicas(1, Duration.ofSeconds(5))
                    .build();
            String key = onPrimary.key("replicated");

            assertThat(waiting.trySet(key, "by-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null, 1));
            assertThat(onReplica.plain.get(key)).isEqualTo("by-7");
            assertThat(onReplica.storedToken(key)).isEqualTo(7);
            assertThat(waiting.trySet(key, "late-6", 6)).isEqualTo(new WriteOutcome.Rejected(7, 6));

            replica.stop();
            FencedRedis briefly = FencedRedis.builder(onPrimary.connection)
                    .waitForReplicas(1, Duration.ofMillis(100))
                    .build();
            assertThat(briefly.trySet(key, "by-8", 8)).isEqualTo(new WriteOutcome.Applied(8, 7, null, 0));
            assertThat(onPrimary.plain.get(key)).isEqualTo("by-8");
            assertThat(FencedRedis.builder(onPrimary.connection).build().trySet(key, "by-9", 9))
                    .isEqualTo(new WriteOutcome.Applied(9, 8, null, WriteOutcome.Applied.NOT_ASKED));
        }
    }

    /** A WAIT that cannot be sent (here a command listener that throws) fails the write, told as applied. */
    @Test
    void aWaitThatCannotBeSentIsReportedAfterAnAppliedWrite() {
        try (EmbeddedRedisServer primary = EmbeddedRedisServer.builder().build();
                RedisFixture redis = new RedisFixture(primary)) {
            RedisClient client = RedisFixture.clientRefusing(redis.uri, CommandType.WAIT);
            String key = redis.key("wait-refused");
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                FencedRedis waiting = FencedRedis.builder(connection)
                        .waitForReplicas(1, Duration.ofMillis(100))
                        .build();

                assertThatThrownBy(() -> waiting.trySet(key, "by-7", 7))
                        .isInstanceOf(FencedRedisWriteException.class)
                        .hasMessageContaining("SET of Redis key " + key + " under token 7 was applied, but WAIT")
                        .hasRootCauseMessage("this listener refuses WAIT");
                assertThat(waiting.async()
                                .trySet(key, "by-8", 8)
                                .handle((outcome, failure) -> failure)
                                .toCompletableFuture()
                                .join())
                        .isInstanceOf(CompletionException.class)
                        .cause()
                        .isInstanceOf(FencedRedisWriteException.class)
                        .hasMessageContaining("under token 8 was applied, but WAIT");
            } finally {
                client.shutdown();
            }
            assertThat(redis.plain.get(key)).isEqualTo("by-8");
            assertThat(redis.storedToken(key)).isEqualTo(8);
        }
    }

    @Test
    void aBadWaitIsRefusedNamingTheValue() {
        try (RedisFixture redis = new RedisFixture()) {
            assertThatThrownBy(() -> FencedRedis.builder(redis.connection).waitForReplicas(0, Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("got 0");
            assertThatThrownBy(() -> FencedRedis.builder(redis.connection).waitForReplicas(1, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("PT0S");
        }
    }

    /** Lettuce would time a longer WAIT out first and report the applied write as failed. */
    @Test
    void aWaitTimeoutNotShorterThanTheCommandTimeoutIsRefused() {
        try (RedisFixture redis = new RedisFixture()) {
            redis.connection.setTimeout(Duration.ofMillis(500));
            assertThatThrownBy(() -> FencedRedis.builder(redis.connection).waitForReplicas(1, Duration.ofSeconds(2)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("PT2S")
                    .hasMessageContaining("PT0.5S");
            assertThat(FencedRedis.builder(redis.connection)
                            .waitForReplicas(1, Duration.ofMillis(100))
                            .build())
                    .isNotNull();
        }
    }
}
