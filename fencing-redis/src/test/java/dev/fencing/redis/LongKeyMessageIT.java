package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A legitimate key of half a megabyte: every message about it (refusals before sending, errors of the fence
 * scripts, the exceptions' resource) stays short and still identifies the key, by its first 64 bytes, its size
 * and the start of its SHA-1, the same in every message, whether Java or the script wrote it.
 */
class LongKeyMessageIT {
    private static final int BOUND = 1_000;

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

    /** What a message shows of a long text, computed here independently of the library. */
    private static String shown(String text, int prefixChars) throws Exception {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        String sha1 =
                HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(utf8));
        return text.substring(0, prefixChars) + "... (" + utf8.length + " bytes, sha1 " + sha1.substring(0, 12) + ")";
    }

    @Test
    void everyMessageAboutALongKeyIsBoundedAndIdentifiesTheKey() throws Exception {
        // given a key of 512 KiB, and one whose non-ASCII start cuts mid-character at 64 bytes
        String key = redis.key("long:" + "k".repeat(512 * 1024));
        String tokenKey = FencedRedis.tokenKey(key);
        String shownKey = shown(key, 64);
        String wide = redis.key("wide:" + "é".repeat(100_000));
        // "{it...:" is ASCII; the cut falls back to the last whole character within 64 bytes
        int asciiHead = wide.indexOf('é');
        String shownWide = shown(wide, asciiHead + (64 - asciiHead) / 2);
        String shownWideTokenKey = shown(FencedRedis.tokenKey(wide), asciiHead + (64 - asciiHead) / 2);

        fenced.set(key, "v", 5);
        String hash = redis.key("long-hash:" + "h".repeat(300_000));
        redis.plain.hset(hash, "f", "v");

        List<ThrowingCallable> failing = List.of(
                // the fence refuses a stale token
                () -> fenced.set(key, "w", 4),
                // refused before anything is sent
                () -> fenced.trySet(key, null, 6),
                () -> fenced.tryHset(key, Map.of(), 6),
                () -> fenced.tryDecrementBy(key, -1, 6),
                () -> fenced.tryIncrementBy(key, 1L << 60, 0, 6),
                () -> fenced.trySet(key, "v", java.time.Duration.ZERO, 6),
                () -> fenced.trySet(key, "v", 0),
                () -> FencedRedis.builder(redis.connection)
                        .clusterKeys(true)
                        .build()
                        .trySet(key.substring(1), "v", 6),
                // the script's error: a counter that is no integer
                () -> fenced.tryIncrementBy(key, 1, 0, 6));
        for (ThrowingCallable write : failing) {
            assertThatThrownBy(write).satisfies(e -> {
                assertThat(e.getMessage()).hasSizeLessThan(BOUND);
                if (e instanceof FencingRedisException fencing) {
                    assertThat(fencing.key()).isEqualTo(key);
                    assertThat(fencing.resource()).hasSizeLessThan(BOUND);
                }
                if (e.getCause() != null) {
                    assertThat(String.valueOf(e.getCause().getMessage())).hasSizeLessThan(BOUND);
                }
            });
        }
        assertThatThrownBy(() -> fenced.set(key, "w", 4)).hasMessageContaining(shownKey);
        assertThatThrownBy(() -> fenced.trySet(hash, "x", 1))
                .hasMessageContaining("WRONGTYPE key " + shown(hash, 64) + " holds a hash")
                .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(BOUND));
        assertThatThrownBy(() -> fenced.trySet(key, null, 6)).hasMessageContaining(shownKey);
        assertThatThrownBy(() -> fenced.tryIncrementBy(key, 1, 0, 6))
                .hasMessageContaining("counter key " + shownKey + " holds \"v\"");

        // the token key's errors come from the script, which shows a key as the library does, also mid-character
        redis.plain.set(FencedRedis.tokenKey(wide), "0007");
        assertThatThrownBy(() -> fenced.trySet(wide, "v", 8))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("Redis key " + shownWide + " under token 8")
                .hasMessageContaining("token key " + shownWideTokenKey + " holds \"0007\"")
                .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(BOUND))
                .satisfies(e -> assertThat(e.getCause().getMessage()).hasSizeLessThan(BOUND));
        redis.plain.del(tokenKey);
        redis.plain.hset(tokenKey, "f", "v");
        assertThatThrownBy(() -> fenced.trySet(key, "v", 9))
                .hasMessageContaining("token key " + shown(tokenKey, 64) + " holds no string")
                .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(BOUND));

        // a short key is shown whole, as before
        String shortKey = redis.key("short");
        fenced.set(shortKey, "v", 5);
        assertThatThrownBy(() -> fenced.set(shortKey, "w", 4))
                .hasMessageContaining("Redis key " + shortKey + ": stored token 5");
    }
}
