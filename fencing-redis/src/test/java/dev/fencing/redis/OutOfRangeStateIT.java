package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * State the fence cannot read: a token key set behind the library's back to a number beyond a Java long, or to
 * something that is no whole number at all.
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
}
