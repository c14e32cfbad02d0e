package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class InvalidInputIT {
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

    @Test
    void aKeyHoldingAnotherTypeIsAWrongTypeErrorNamingTheKeyAndNothingIsWritten() {
        String hash = redis.key("a-hash");
        String string = redis.key("a-string");
        redis.plain.hset(hash, "f", "v");
        redis.plain.set(string, "v");

        assertThatThrownBy(() -> fenced.trySet(hash, "x", 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("WRONGTYPE")
                .hasMessageContaining(hash)
                .hasMessageContaining("holds a hash");
        assertThatThrownBy(() -> fenced.tryHset(string, Map.of("f", "x"), 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("WRONGTYPE")
                .hasMessageContaining(string)
                .satisfies(
                        e -> assertThat(((FencedRedisWriteException) e).key()).isEqualTo(string));
        assertThatThrownBy(() -> fenced.tryIncrementBy(hash, 1, 0, 1))
                .hasMessageContaining("WRONGTYPE")
                .hasMessageContaining(hash);
        // a guard that fails does not hide the wrong type behind a counter read as 0
        assertThatThrownBy(() -> fenced.tryDecrementBy(hash, 1, 1))
                .hasMessageContaining("WRONGTYPE")
                .hasMessageContaining(hash);

        assertThat(redis.plain.hgetall(hash)).isEqualTo(Map.of("f", "v"));
        assertThat(redis.plain.get(string)).isEqualTo("v");
        assertThat(redis.storedToken(hash)).isZero();
        assertThat(redis.storedToken(string)).isZero();
    }

    @Test
    void aTokenKeyHoldingSomethingElseFailsClosedNamingIt() {
        String key = redis.key("garbled");
        String tokenKey = FencedRedis.tokenKey(key);
        redis.plain.set(tokenKey, "0007");
        assertThatThrownBy(() -> fenced.trySet(key, "v", 9))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(tokenKey)
                .hasMessageContaining("0007");
        assertThatThrownBy(() -> fenced.tryIncrementBy(key, 1, 0, 9))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(tokenKey)
                .hasMessageContaining("0007");
        redis.plain.del(tokenKey);
        redis.plain.rpush(tokenKey, "8");
        assertThatThrownBy(() -> fenced.tryDelete(key, 9))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(tokenKey);
        // the counter's script reads the token with MGET, which reads a list as nil: a token key that exists
        // fails closed all the same
        assertThatThrownBy(() -> fenced.tryIncrementBy(key, 1, 0, 9))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(tokenKey)
                .hasMessageContaining("holds no string");
        assertThat(redis.plain.exists(key)).isZero();
        assertThat(redis.plain.lrange(tokenKey, 0, -1)).containsExactly("8");
    }

    @Test
    void aValueOverTheLimitIsRefusedNamingTheKey() {
        FencedRedis small =
                FencedRedis.builder(redis.connection).maxValueBytes(8).build();
        String key = redis.key("big");
        assertThatThrownBy(() -> small.trySet(key, "123456789", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("9 bytes");
        // a script's arguments together: Redis closes the connection on an argument over its own limit, and the
        // writes pipelined behind it then fail too
        assertThatThrownBy(() -> small.tryEval(UserScriptIT.RESERVE, List.of(key), List.of("1234", "56789"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("9 bytes");
        assertThat(small.tryEval(UserScriptIT.RESERVE, List.of(key), List.of("1", "2"), 1))
                .isInstanceOf(WriteOutcome.Applied.class);
        assertThatThrownBy(() -> FencedRedis.builder(redis.connection).maxValueBytes(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
        assertThat(redis.plain.exists(key)).isZero();
    }

    @Test
    void clusterKeysRefuseAKeyWithoutHashTagBeforeAnythingIsSent() {
        FencedRedis clusterKeys =
                FencedRedis.builder(redis.connection).clusterKeys(true).build();
        assertThatThrownBy(() -> clusterKeys.trySet("stock:sku-42", "1", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'stock:sku-42'")
                .hasMessageContaining("hash tag");
        assertThatThrownBy(() -> clusterKeys.tryEval(
                        UserScriptIT.RESERVE, List.of(redis.key("a"), "other"), List.of("1", "x"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'other'");
        assertThat(redis.plain.exists("stock:sku-42")).isZero();
        assertThat(clusterKeys.trySet(redis.key("tagged"), "1", 1).isApplied()).isTrue();
    }

    @Test
    void aNegativeAmountOrAnEmptyHashIsRefusedNamingTheKey() {
        String key = redis.key("input");
        assertThatThrownBy(() -> fenced.tryDecrementBy(key, -1, 1)).hasMessageContaining(key);
        assertThatThrownBy(() -> fenced.tryHset(key, Map.of(), 1)).hasMessageContaining(key);
        assertThatThrownBy(() -> fenced.trySet(key, "v", java.time.Duration.ZERO, 1))
                .hasMessageContaining(key);
        assertThatThrownBy(() -> fenced.trySet(key, "v", java.time.Duration.ofSeconds(Long.MAX_VALUE), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(key);
        assertThat(redis.plain.exists(key)).isZero();
    }

    /** The amount is named as the caller gave it, not as the delta it becomes (its sign turned). */
    @Test
    void anAmountBeyondTheGuardsRangeIsRefusedNamingItAsGiven() {
        String key = redis.key("amount");
        long beyond = (1L << 53) + 1;
        assertThatThrownBy(() -> fenced.tryDecrementBy(key, beyond, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("amount to take from Redis key '" + key + "'")
                .hasMessageContaining("got " + beyond)
                .hasMessageNotContaining("-" + beyond);
        assertThat(redis.plain.exists(key, FencedRedis.tokenKey(key))).isZero();
    }

    /**
     * UTF-8 has no encoding for a UTF-16 surrogate without its pair, and Lettuce's own encoding sends {@code ?}
     * in its place: two keys that differ in Java are one key in Redis (shown with plain commands here), and two
     * fields one field. The fence refuses such text in a key, a value, a field or a script's argument, naming it,
     * before anything is sent.
     */
    @Test
    void textWithAnUnpairedSurrogateIsRefusedNamingItBeforeAnythingIsSent() {
        String base = redis.key("surrogate");
        String high = base + "\uD800";
        String low = base + "\uDC00";
        redis.plain.set(high, "by-high");
        assertThat(redis.plain.get(low))
                .as("two Java keys, one Redis key, with plain commands")
                .isEqualTo("by-high");
        redis.plain.del(high);

        assertThatThrownBy(() -> fenced.trySet(high, "v", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + base + "\\uD800'")
                .hasMessageContaining("nothing was sent");
        assertThatThrownBy(() -> fenced.trySet(base, "price:\uDC00", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'price:\\uDC00' (for Redis key '" + base + "')");
        assertThatThrownBy(() -> fenced.tryHset(base, Map.of("f\uD800", "1", "f\uDBFF", "2"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'f\\uD");
        assertThatThrownBy(() -> fenced.tryEval(UserScriptIT.RESERVE, List.of(base), List.of("1", "x\uD800"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'x\\uD800'");
        assertThat(redis.plain.exists(base, base + "?", FencedRedis.tokenKey(base), FencedRedis.tokenKey(base + "?")))
                .isZero();

        // a surrogate with its pair (an emoji) is text like any other
        assertThat(fenced.trySet(base, "\uD83D\uDE00", 1).isApplied()).isTrue();
        assertThat(redis.plain.get(base)).isEqualTo("\uD83D\uDE00");
    }
}
