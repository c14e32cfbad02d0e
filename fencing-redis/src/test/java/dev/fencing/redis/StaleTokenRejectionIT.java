package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.InvalidFenceTokenException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class StaleTokenRejectionIT {
    private static RedisFixture redis;
    private static FencedRedis strict;
    private static FencedRedis monotonic;

    @BeforeAll
    static void connect() {
        redis = new RedisFixture();
        strict = redis.fenced(FencePolicy.STRICT);
        monotonic = redis.fenced(FencePolicy.MONOTONIC);
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    @Test
    void staleSetIsRejectedWithTheStoredTokenWhileAPlainSetOverwritesTheNewerValue() {
        String key = redis.key("state");
        // given: holder 8 wrote after holder 7 paused
        assertThat(strict.trySet(key, "by-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null));
        assertThat(strict.trySet(key, "by-8", 8)).isEqualTo(new WriteOutcome.Applied(8, 7, null));

        // when: holder 7 resumes and writes
        WriteOutcome late = strict.trySet(key, "late-7", 7);

        // then
        assertThat(late).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.get(key)).isEqualTo("by-8");
        assertThat(redis.storedToken(key)).isEqualTo(8);
        assertThatThrownBy(() -> strict.set(key, "late-7", 7))
                .isInstanceOf(StaleFenceException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("stored token 8")
                .satisfies(
                        e -> assertThat(((StaleFenceException) e).storedToken()).isEqualTo(8));

        // the same late write without the fence lands on the newer holder's value
        redis.plain.set(key, "late-7");
        assertThat(redis.plain.get(key)).isEqualTo("late-7");
    }

    @Test
    void staleHsetIsRejectedAndLeavesEveryFieldWhileAPlainHsetOverwritesThem() {
        String key = redis.key("order");
        strict.hset(key, Map.of("state", "NEW", "by", "7"), 7);
        strict.hset(key, Map.of("state", "PAID", "by", "8"), 8);

        WriteOutcome late = strict.tryHset(key, Map.of("state", "CANCELLED", "by", "7"), 7);

        assertThat(late).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.hgetall(key)).isEqualTo(Map.of("state", "PAID", "by", "8"));
        redis.plain.hset(key, Map.of("state", "CANCELLED", "by", "7"));
        assertThat(redis.plain.hgetall(key)).isEqualTo(Map.of("state", "CANCELLED", "by", "7"));
    }

    @Test
    void anEqualTokenWritesOnceUnderStrictAndAgainUnderMonotonic() {
        String strictKey = redis.key("strict");
        String monotonicKey = redis.key("monotonic");
        strict.set(strictKey, "first", 5);
        monotonic.set(monotonicKey, "first", 5);

        assertThat(strict.trySet(strictKey, "second", 5)).isEqualTo(new WriteOutcome.Rejected(5, 5));
        assertThat(monotonic.trySet(monotonicKey, "second", 5)).isEqualTo(new WriteOutcome.Applied(5, 5, null));

        assertThat(redis.plain.get(strictKey)).isEqualTo("first");
        assertThat(redis.plain.get(monotonicKey)).isEqualTo("second");
        assertThat(monotonic.trySet(monotonicKey, "third", 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
        assertThatThrownBy(() -> strict.set(strictKey, "second", 5))
                .isInstanceOf(StaleFenceException.class)
                .hasMessageContaining("already written");
    }

    @Test
    void aDeleteKeepsTheTokenSoAStaleWriteCannotRecreateTheKeyWhileAPlainSetDoes() {
        String key = redis.key("deleted");
        strict.set(key, "by-7", 7);
        assertThat(strict.tryDelete(key, 8)).isEqualTo(new WriteOutcome.Applied(8, 7, 1L));
        assertThat(redis.plain.exists(key)).isZero();

        assertThat(strict.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(strict.tryHset(key, Map.of("f", "v"), 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(strict.tryIncrementBy(key, 1, 0, 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(strict.tryDelete(key, 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.exists(key)).isZero();
        assertThat(redis.storedToken(key)).isEqualTo(8);

        redis.plain.set(key, "late-7");
        assertThat(redis.plain.get(key)).isEqualTo("late-7");
    }

    @Test
    void anExpiredValueLeavesItsTokenBehindSoAHolderPausedPastTheExpiryIsStillRefused() {
        String key = redis.key("expiring");
        strict.set(key, "by-7", 7);
        strict.set(key, "by-8", Duration.ofMillis(200), 8);
        long valueTtl = redis.plain.pttl(key);
        assertThat(valueTtl).isBetween(1L, 200L);
        assertThat(redis.plain.pttl(FencedRedis.tokenKey(key))).isEqualTo(-1L); // never expires

        await().atMost(Duration.ofSeconds(5)).until(() -> redis.plain.exists(key) == 0);

        assertThat(strict.trySet(key, "late-7", 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(redis.plain.exists(key)).isZero();
        assertThat(strict.trySet(key, "by-9", 9)).isEqualTo(new WriteOutcome.Applied(9, 8, null));
        assertThat(redis.plain.pttl(key)).isEqualTo(-1L); // a set without time to live clears it, as SET does
        redis.plain.set(key, "late-7");
        assertThat(redis.plain.get(key)).isEqualTo("late-7");
    }

    @Test
    void tokensAreComparedExactlyBeyondTheDoublesRange() {
        // as doubles (Lua's numbers), 2^53 and 2^53 + 1 are the same number
        long base = 1L << 53;
        String strictKey = redis.key("wide-strict");
        strict.set(strictKey, "base", base);
        assertThat(strict.trySet(strictKey, "newer", base + 1))
                .isEqualTo(new WriteOutcome.Applied(base + 1, base, null));

        String monotonicKey = redis.key("wide-monotonic");
        monotonic.set(monotonicKey, "newer", base + 1);
        assertThat(monotonic.trySet(monotonicKey, "older", base)).isEqualTo(new WriteOutcome.Rejected(base + 1, base));
        assertThat(redis.plain.get(monotonicKey)).isEqualTo("newer");

        assertThat(strict.trySet(strictKey, "max", Long.MAX_VALUE))
                .isEqualTo(new WriteOutcome.Applied(Long.MAX_VALUE, base + 1, null));
        assertThat(monotonic.trySet(strictKey, "below max", Long.MAX_VALUE - 1))
                .isEqualTo(new WriteOutcome.Rejected(Long.MAX_VALUE, Long.MAX_VALUE - 1));
        assertThat(redis.plain.get(strictKey)).isEqualTo("max");
    }

    @Test
    void aNonPositiveTokenIsRefusedBeforeAnythingIsSent() {
        String key = redis.key("zero");
        assertThatThrownBy(() -> strict.trySet(key, "v", 0))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("got 0")
                .hasMessageContaining(key);
        assertThatThrownBy(() -> strict.tryDelete(key, -3)).isInstanceOf(InvalidFenceTokenException.class);
        assertThat(redis.plain.exists(key, FencedRedis.tokenKey(key))).isZero();
    }
}
