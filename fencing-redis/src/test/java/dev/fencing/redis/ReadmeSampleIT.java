package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The fencing-redis sample of docs/redis.md, line for line, run on a server of its own (its keys are fixed). */
class ReadmeSampleIT {

    @Test
    void theReadmeSampleReservesStockAndAStaleHolderIsRefused() {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build()) {
            RedisClient client = RedisClient.create(server.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                connection.sync().set("{sku-42}:stock", "5");

                assertThat(reserve(connection, 3, 8)).isEqualTo(new WriteOutcome.Applied(8, 0, 2L));
                assertThat(connection.sync().hgetall("{order-7}"))
                        .isEqualTo(Map.of("state", "RESERVED", "sku", "sku-42"));

                // a holder with token 7, paused while 8 reserved, comes back
                assertThatThrownBy(() -> reserve(connection, 1, 7))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("a newer holder wrote token 8");
                assertThat(connection.sync().get("{sku-42}:stock")).isEqualTo("2");
            } finally {
                client.shutdown();
            }
        }
    }

    private static WriteOutcome reserve(StatefulRedisConnection<String, String> connection, long qty, long token) {
        FencedRedis redis = FencedRedis.builder(connection).build(); // FencePolicy.STRICT
        WriteOutcome taken = redis.tryDecrementBy("{sku-42}:stock", qty, token); // Applied | Rejected | PredicateFailed
        if (taken instanceof WriteOutcome.Rejected rejected) {
            throw new IllegalStateException("a newer holder wrote token " + rejected.storedToken());
        }
        redis.hset("{order-7}", Map.of("state", "RESERVED", "sku", "sku-42"), token); // throws StaleFenceException
        return taken;
    }
}
