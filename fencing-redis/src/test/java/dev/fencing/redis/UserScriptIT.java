package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import io.lettuce.core.ScriptOutputType;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class UserScriptIT {
    /** Takes ARGV[1] from the hash's stock field and records ARGV[2] in the order list; 0 if too few. */
    static final FencedScript RESERVE = FencedScript.of("""
            local stock = tonumber(redis.call('HGET', KEYS[1], 'stock') or '0')
            if stock < tonumber(ARGV[1]) then return 0 end
            redis.call('HINCRBY', KEYS[1], 'stock', -tonumber(ARGV[1]))
            redis.call('RPUSH', KEYS[2], ARGV[2])
            return {#KEYS, #ARGV, redis.call('HGET', KEYS[1], 'stock')}
            """);

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
    void theBodyRunsUnderTheFenceWithItsOwnKeysAndArguments() {
        String item = redis.key("item");
        String orders = redis.key("item") + ":orders";
        redis.plain.hset(item, "stock", "5");

        WriteOutcome outcome = fenced.tryEval(RESERVE, List.of(item, orders), List.of("2", "order-1"), 7);

        // the body saw 2 keys and 2 arguments: the fence's own were taken off before it ran
        assertThat(outcome).isEqualTo(new WriteOutcome.Applied(7, 0, List.of(2L, 2L, "3")));
        assertThat(redis.plain.lrange(orders, 0, -1)).containsExactly("order-1");
        assertThat(redis.storedToken(item)).isEqualTo(7);
    }

    @Test
    void aStaleScriptDoesNotRunItsBodyWhileThePlainScriptRunsIt() {
        String item = redis.key("stale-item");
        String orders = item + ":orders";
        redis.plain.hset(item, "stock", "5");
        fenced.eval(RESERVE, List.of(item, orders), List.of("1", "order-by-8"), 8);

        WriteOutcome late = fenced.tryEval(RESERVE, List.of(item, orders), List.of("1", "order-by-7"), 7);

        assertThat(late).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.hget(item, "stock")).isEqualTo("4");
        assertThat(redis.plain.lrange(orders, 0, -1)).containsExactly("order-by-8");
        assertThatThrownBy(() -> fenced.eval(RESERVE, List.of(item, orders), List.of("1", "order-by-7"), 7))
                .isInstanceOf(StaleFenceException.class);

        // the same body sent as a plain EVAL lands
        redis.plain.<Object>eval(
                RESERVE.body(), ScriptOutputType.MULTI, new String[] {item, orders}, "1", "order-by-7");
        assertThat(redis.plain.lrange(orders, 0, -1)).containsExactly("order-by-8", "order-by-7");
    }

    @Test
    void theScriptIsSentAgainWhenRedisHasForgottenIt() {
        String item = redis.key("flushed");
        String orders = item + ":orders";
        redis.plain.hset(item, "stock", "5");
        fenced.eval(RESERVE, List.of(item, orders), List.of("1", "a"), 1);

        redis.plain.scriptFlush(); // the next EVALSHA gets NOSCRIPT

        assertThat(fenced.eval(RESERVE, List.of(item, orders), List.of("1", "b"), 2))
                .isEqualTo(List.of(2L, 2L, "3"));
        assertThat(fenced.trySet(redis.key("after-flush"), "v", 1).isApplied()).isTrue();
    }

    @Test
    void anErrorInTheBodyIsReportedAndKeepsTheRaisedToken() {
        String key = redis.key("failing");
        FencedScript failing = FencedScript.of("""
                redis.call('SET', KEYS[1], 'half')
                return redis.call('INCR', KEYS[1])
                """);

        assertThatThrownBy(() -> fenced.tryEval(failing, List.of(key), List.of(), 3))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(key);
        // Redis keeps the body's write before the failure; the raised token keeps it from older holders
        assertThat(redis.plain.get(key)).isEqualTo("half");
        assertThat(fenced.trySet(key, "older", 2)).isEqualTo(new WriteOutcome.Rejected(3, 2));
    }

    /**
     * A body given another key's token key could lower it, and the next stale write to that key would land:
     * every key of a fenced script that ends in the token suffix is refused, before anything is sent.
     */
    @Test
    void aTokenKeyAmongAScriptsKeysIsRefusedSoNoBodyCanLowerAToken() {
        String victim = redis.key("victim");
        String other = redis.key("other");
        fenced.set(victim, "by-9", 9);
        FencedScript lower = FencedScript.of("redis.call('SET', KEYS[2], ARGV[1]) return 1");

        assertThatThrownBy(() -> fenced.tryEval(lower, List.of(other, FencedRedis.tokenKey(victim)), List.of("1"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(FencedRedis.tokenKey(victim));
        assertThat(redis.storedToken(victim)).isEqualTo(9);
        assertThat(fenced.trySet(victim, "stale-2", 2)).isEqualTo(new WriteOutcome.Rejected(9, 2));
    }
}
