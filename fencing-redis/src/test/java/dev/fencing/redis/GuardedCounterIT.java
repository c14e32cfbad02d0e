package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class GuardedCounterIT {
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
    void aDecrementThatWouldGoNegativeIsRefusedAndChangesNothingWhileAPlainDecrbyOversells() {
        String stock = redis.key("stock");
        assertThat(fenced.incrementBy(stock, 5, 0, 1)).isEqualTo(5);

        assertThat(fenced.tryDecrementBy(stock, 3, 2)).isEqualTo(new WriteOutcome.Applied(2, 1, 2L));
        WriteOutcome oversell = fenced.tryDecrementBy(stock, 3, 3);

        assertThat(oversell).isEqualTo(new WriteOutcome.PredicateFailed(2, 3, 2));
        assertThat(redis.plain.get(stock)).isEqualTo("2");
        assertThat(redis.storedToken(stock)).isEqualTo(2); // nothing changed, not even the token
        assertThatThrownBy(() -> fenced.decrementBy(stock, 3, 3))
                .isInstanceOf(FencePredicateFailedException.class)
                .hasMessageContaining(stock)
                .hasMessageContaining("value 2");
        assertThat(fenced.decrementBy(stock, 2, 3)).isZero();

        redis.plain.decrby(stock, 3);
        assertThat(redis.plain.get(stock)).isEqualTo("-3");
    }

    @Test
    void aStaleDecrementIsRejectedBeforeItsGuardIsLookedAt() {
        String stock = redis.key("stale-stock");
        fenced.incrementBy(stock, 10, 0, 4);
        fenced.decrementBy(stock, 1, 5);

        assertThat(fenced.tryDecrementBy(stock, 1, 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
        assertThat(fenced.tryDecrementBy(stock, 100, 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
        assertThat(redis.plain.get(stock)).isEqualTo("9");
        redis.plain.decrby(stock, 1);
        assertThat(redis.plain.get(stock)).isEqualTo("8");
    }

    @Test
    void aMissingCounterCountsAsZeroAndKeepsItsTimeToLive() {
        String missing = redis.key("missing");
        assertThat(fenced.tryDecrementBy(missing, 1, 1)).isEqualTo(new WriteOutcome.PredicateFailed(0, 1, 0));
        assertThat(redis.plain.exists(missing)).isZero();

        String counter = redis.key("with-ttl");
        redis.plain.set(counter, "3");
        redis.plain.pexpire(counter, 60_000);
        assertThat(fenced.incrementBy(counter, 2, Long.MIN_VALUE >> 11, 1)).isEqualTo(5);
        assertThat(redis.plain.pttl(counter)).isPositive();
    }

    @Test
    void aCounterThatIsNotAnIntegerIsAnErrorNamingTheKey() {
        String key = redis.key("text");
        redis.plain.set(key, "seven");
        assertThatThrownBy(() -> fenced.tryIncrementBy(key, 1, 0, 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("seven");
        redis.plain.set(key, Long.toString(1L << 60));
        assertThatThrownBy(() -> fenced.tryIncrementBy(key, 1, 0, 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("2^53");
        assertThat(redis.storedToken(key)).isZero();
    }

    /**
     * The guard's arithmetic is Lua's doubles, exact below 2^53: a counter at or beyond it, or a change that
     * would take it there, is refused with nothing written; 2^53 + 1 would read as 2^53 and pass the check.
     */
    @Test
    void aCounterThatIsOrWouldGoBeyondTwoToTheFiftyThirdIsRefusedWithNothingWritten() {
        String high = redis.key("high");
        String low = redis.key("low");
        String beyond = redis.key("beyond");
        redis.plain.set(high, "9007199254740991"); // 2^53 - 1
        redis.plain.set(low, "-1");
        redis.plain.set(beyond, "9007199254740993"); // 2^53 + 1, the double 2^53

        assertThatThrownBy(() -> fenced.tryIncrementBy(high, 1, 0, 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("beyond +-2^53");
        assertThatThrownBy(() -> fenced.tryIncrementBy(low, -9007199254740992L, -9007199254740992L, 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("beyond +-2^53");
        assertThatThrownBy(() -> fenced.tryIncrementBy(beyond, -1, 0, 1))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("beyond +-2^53");
        assertThat(redis.plain.get(high)).isEqualTo("9007199254740991");
        assertThat(redis.plain.get(low)).isEqualTo("-1");
        assertThat(redis.plain.get(beyond)).isEqualTo("9007199254740993");
        assertThat(redis.storedToken(high)).isZero();
        assertThat(fenced.tryIncrementBy(high, -1, 0, 2)).isEqualTo(new WriteOutcome.Applied(2, 0, 9007199254740990L));
    }
}
