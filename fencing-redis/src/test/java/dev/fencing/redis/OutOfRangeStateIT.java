package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * State the fence cannot read, and input Redis cannot take: a token key set behind the library's back to a number
 * beyond a Java long (or to something that is no whole number at all), and keys longer than the server's {@code
 * proto-max-bulk-len}.
 */
class OutOfRangeStateIT {
    private static RedisFixture redis;
    private static FencedRedis fenced;

    @BeforeAll
    static void connect() {
        redis = new RedisFixture();
        fenced = redis.fenced(FencePolicy.STRICT);
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    /**
     * A token key holding a number beyond {@code Long.MAX_VALUE} (19 digits, so not refused for its length) is
     * refused by every fenced write as a token key that holds no fence token, naming the key and the value,
     * and nothing is written: no token of this library can beat it, and no reply can carry it.
     */
    @Test
    void aStoredTokenBeyondALongIsRefusedByEveryWriteNamingTheKeyAndTheValue() {
        String key = redis.key("beyond-long");
        String tokenKey = FencedRedis.tokenKey(key);
        for (String stored :
                List.of("9223372036854775808", "9999999999999999999", "99999999999999999999", "-5", "1.5", "inf")) {
            redis.plain.set(tokenKey, stored);
            List<ThrowingCallable> writes = List.of(
                    () -> fenced.trySet(key, "v", 9),
                    () -> fenced.trySet(key, "v", java.time.Duration.ofSeconds(60), 9),
                    () -> fenced.tryHset(key, Map.of("f", "v"), 9),
                    () -> fenced.tryDelete(key, 9),
                    () -> fenced.tryIncrementBy(key, 1, 0, 9),
                    () -> fenced.tryDecrementBy(key, 1, 9),
                    () -> fenced.tryEval(UserScriptIT.RESERVE, List.of(key), List.of("1", "x"), 9),
                    () -> fenced.trySet(key, "v", Long.MAX_VALUE));
            for (ThrowingCallable write : writes) {
                assertThatThrownBy(write)
                        .isInstanceOf(FencedRedisWriteException.class)
                        .hasMessageContaining(tokenKey)
                        .hasMessageContaining("\"" + stored + "\"")
                        .hasMessageContaining("nothing was written");
            }
            assertThat(redis.plain.exists(key)).isZero();
            assertThat(redis.plain.get(tokenKey)).isEqualTo(stored);
        }
        // the largest long is a token like any other
        redis.plain.set(tokenKey, Long.toString(Long.MAX_VALUE));
        assertThat(fenced.trySet(key, "v", 9)).isEqualTo(new WriteOutcome.Rejected(Long.MAX_VALUE, 9));
    }

    /**
     * Redis refuses a bulk string longer than its {@code proto-max-bulk-len} with a protocol error that quotes the
     * whole key, and closes the connection. A key whose token key (the key and {@code ":fencing-token"}) is longer
     * than {@link FencedRedis.Builder#maxKeyBytes}, set to the server's limit, is refused before anything is sent,
     * naming its size.
     */
    @Test
    void aKeyOverTheLimitIsRefusedNamingItsSizeAndNothingIsWritten() {
        int limit = 1024 * 1024;
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder()
                        .setting("proto-max-bulk-len", Integer.toString(limit))
                        .build();
                RedisFixture small = new RedisFixture(server)) {
            FencedRedis limited =
                    FencedRedis.builder(small.connection).maxKeyBytes(limit).build();
            String fits = "{k}" + "x".repeat(limit - "{k}".length() - FencedRedis.TOKEN_KEY_SUFFIX.length());
            String over = fits + "x";
            // a key whose token key just fits is written
            assertThat(limited.trySet(fits, "v", 1).isApplied()).isTrue();

            List<ThrowingCallable> writes = List.of(
                    () -> limited.trySet(over, "v", 2),
                    () -> limited.tryHset(over, Map.of("f", "v"), 2),
                    () -> limited.tryDelete(over, 2),
                    () -> limited.tryIncrementBy(over, 1, 0, 2),
                    () -> limited.tryEval(UserScriptIT.RESERVE, List.of(over), List.of("1", "x"), 2));
            for (ThrowingCallable write : writes) {
                assertThatThrownBy(write)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining((limit - 13) + " bytes (UTF-8), its token key " + (limit + 1))
                        .hasMessageContaining("over the limit of " + limit)
                        .hasMessageContaining("nothing was sent");
            }
            // a script's other keys have no token key: one over the limit itself
            String longer = "{k}" + "x".repeat(limit - 2);
            assertThatThrownBy(
                            () -> limited.tryEval(UserScriptIT.RESERVE, List.of("{k}a", longer), List.of("1", "x"), 2))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining((limit + 1) + " bytes")
                    .hasMessageContaining("over the limit of " + limit)
                    .hasMessageContaining("nothing was sent");
            assertThatThrownBy(() -> FencedRedis.builder(small.connection).maxKeyBytes(14))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("got 14");
            // the connection is still open and nothing else was written
            assertThat(small.plain.dbsize()).isEqualTo(2);
            assertThat(small.plain.exists(over)).isZero();
        }
    }

    /**
     * A value longer than the server's {@code proto-max-bulk-len}, though within {@link
     * FencedRedis.Builder#maxValueBytes} (by default 512 MB), is refused before anything is sent, naming its size and
     * the server's limit, which the writer reads at build: sent, Redis answered it with a protocol error and closed
     * the connection, and the write pipelined behind it failed too. The same for a field of a hash and an argument of
     * a script, each its own bulk string.
     */
    @Test
    void aValueOverTheServersBulkLimitIsRefusedBeforeSendingAndTheWriteBehindItLands() throws Exception {
        int limit = 1024 * 1024;
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder()
                        .setting("proto-max-bulk-len", Integer.toString(limit))
                        .build();
                RedisFixture small = new RedisFixture(server)) {
            FencedRedis writer = FencedRedis.builder(small.connection).build();
            String over = "x".repeat(limit + 1);

            List<ThrowingCallable> writes = List.of(
                    () -> writer.async().trySet("{v}a", over, 1),
                    () -> writer.async().tryHset("{v}a", Map.of("f", over), 1),
                    () -> writer.async().tryHset("{v}a", Map.of(over, "v"), 1),
                    () -> writer.async().tryEval(UserScriptIT.RESERVE, List.of("{v}a"), List.of("1", over), 1));
            for (ThrowingCallable write : writes) {
                assertThatThrownBy(write)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining((limit + 1) + " bytes (UTF-8)")
                        .hasMessageContaining("proto-max-bulk-len " + limit)
                        .hasMessageContaining("nothing was written");
            }
            // the write pipelined behind them lands, on the same connection
            WriteOutcome behind =
                    writer.async().trySet("{v}b", "v", 1).toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertThat(behind.isApplied()).isTrue();
            // a value of exactly the server's limit is taken, and so is a hash whose fields together exceed it
            assertThat(writer.trySet("{v}a", "x".repeat(limit), 2).isApplied()).isTrue();
            assertThat(writer.tryHset("{v}h", Map.of("f", "x".repeat(limit), "g", "y".repeat(limit)), 2)
                            .isApplied())
                    .isTrue();
            assertThat(small.plain.strlen("{v}a")).isEqualTo(limit);
            assertThat(small.plain.exists("{v}a:fencing-token", "{v}b", "{v}h")).isEqualTo(3);
        }
    }
}
