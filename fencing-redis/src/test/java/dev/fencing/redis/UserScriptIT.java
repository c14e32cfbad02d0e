package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.redis.internal.AsyncFencedRedis;
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

    /**
     * Redis does not roll a script back: once the fence has raised the token, a body that fails leaves the new
     * token and its own earlier writes behind, and the message says so, with the token before and after. An
     * error the fence itself raises, before anything is written, says that nothing was.
     */
    @Test
    void anErrorInTheBodyIsReportedAsComingAfterTheTokenWasRaisedWhichStays() {
        String key = redis.key("failing");
        fenced.set(key, "before", 2);
        FencedScript failing = FencedScript.of("""
                redis.call('SET', KEYS[1], 'half')
                return redis.call('INCR', KEYS[1])
                """);

        assertThatThrownBy(() -> fenced.tryEval(failing, List.of(key), List.of(), 3))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("set the key's token to 3 (it was 2), then the script's body failed")
                .hasMessageContaining("value is not an integer")
                .hasMessageContaining("what the body wrote before it failed stays");
        // Redis keeps the body's write before the failure; the raised token keeps it from older holders
        assertThat(redis.plain.get(key)).isEqualTo("half");
        assertThat(redis.storedToken(key)).isEqualTo(3);
        assertThat(fenced.trySet(key, "older", 2)).isEqualTo(new WriteOutcome.Rejected(3, 2));

        String refused = redis.key("refusing");
        FencedScript refusing = FencedScript.of("""
                redis.call('SET', KEYS[1], 'written')
                return redis.error_reply('OUT OF STOCK')
                """);
        assertThatThrownBy(() -> fenced.async()
                        .tryEval(refusing, List.of(refused), List.of(), 5)
                        .toCompletableFuture()
                        .join())
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("set the key's token to 5 (it was 0), then the script's body failed")
                .hasMessageContaining("OUT OF STOCK");
        assertThat(redis.plain.get(refused)).isEqualTo("written");
        assertThat(redis.storedToken(refused)).isEqualTo(5);

        String unreadable = redis.key("unreadable-token");
        redis.plain.set(FencedRedis.tokenKey(unreadable), "junk");
        assertThatThrownBy(() -> fenced.tryEval(failing, List.of(unreadable), List.of(), 7))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("nothing was written")
                .hasMessageNotContaining("token to 7");
        assertThat(redis.plain.get(unreadable)).isNull();
    }

    /**
     * A body that runs to its end and returns a table holding an error element was applied, token and all;
     * Lettuce fails the whole call on such an element, and the message says that the write passed the fence
     * rather than that it failed.
     */
    @Test
    void aBodyWhoseReplyHoldsAnErrorRanToItsEndAndTheMessageSaysSo() {
        String item = redis.key("error-in-reply");
        FencedScript reserve = FencedScript.of("""
                redis.call('SET', KEYS[1], 'reserved')
                return {1, redis.error_reply('SECOND STEP REFUSED')}
                """);

        assertThatThrownBy(() -> fenced.tryEval(reserve, List.of(item), List.of(), 4))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(item)
                .hasMessageContaining("set the key's token to 4 (it was 0)")
                .hasMessageContaining("ran to its end")
                .hasMessageContaining("SECOND STEP REFUSED");
        assertThat(redis.plain.get(item)).isEqualTo("reserved");
        assertThat(redis.storedToken(item)).isEqualTo(4);

        redis.plain.scriptFlush(); // the same through EVAL, after NOSCRIPT
        assertThatThrownBy(() -> fenced.tryEval(reserve, List.of(item), List.of(), 5))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("set the key's token to 5 (it was 4)")
                .hasMessageContaining("ran to its end");
        assertThat(redis.storedToken(item)).isEqualTo(5);
    }

    /**
     * Scripts made from changing text (one per tenant) do not grow the writer's cache past its size, and a
     * script dropped from it runs again as before, under the fence, also once Redis has forgotten it.
     */
    @Test
    void theScriptCacheKeepsToItsSizeAndAScriptDroppedFromItStillRunsUnderTheFence() {
        FencedRedis small =
                FencedRedis.builder(redis.connection).scriptCacheSize(2).build();
        String key = redis.key("tenant-0");
        assertThat(small.eval(tenantScript(0), List.of(key), List.of("a"), 1)).isEqualTo("tenant-0 a");

        for (int tenant = 1; tenant <= 20; tenant++) {
            String other = redis.key("tenant-" + tenant);
            assertThat(small.eval(tenantScript(tenant), List.of(other), List.of("a"), 1))
                    .isEqualTo("tenant-" + tenant + " a");
            assertThat(((AsyncFencedRedis) small.async()).cachedScripts())
                    .as("scripts kept after %d tenants", tenant + 1)
                    .isLessThanOrEqualTo(2);
        }

        // tenant 0's script was dropped from the writer's cache long ago; Redis still has it
        assertThat(small.tryEval(tenantScript(0), List.of(key), List.of("b"), 2))
                .isEqualTo(new WriteOutcome.Applied(2, 1, "tenant-0 b"));
        assertThat(small.tryEval(tenantScript(0), List.of(key), List.of("stale"), 1))
                .isEqualTo(new WriteOutcome.Rejected(2, 1));
        redis.plain.scriptFlush(); // and now Redis has forgotten it too: NOSCRIPT, then EVAL
        assertThat(small.tryEval(tenantScript(0), List.of(key), List.of("c"), 3))
                .isEqualTo(new WriteOutcome.Applied(3, 2, "tenant-0 c"));
        assertThat(small.tryEval(tenantScript(0), List.of(key), List.of("stale"), 2))
                .isEqualTo(new WriteOutcome.Rejected(3, 2));
        assertThat(redis.plain.get(key)).isEqualTo("tenant-0 c");
        assertThatThrownBy(() -> FencedRedis.builder(redis.connection).scriptCacheSize(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
    }

    /** A body whose text differs per tenant, as an application that builds its scripts from text would have. */
    private static FencedScript tenantScript(int tenant) {
        return FencedScript.of(
                "local v = 'tenant-" + tenant + " ' .. ARGV[1]\n" + "redis.call('SET', KEYS[1], v)\n" + "return v");
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
