package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Eight writers, each on a connection of its own, write the same keys with random tokens, released
 * together by a latch. Each accepted write also appends its token to the key's history list in the same
 * script, so the history is the order in which Redis applied them. Every round: the history rises (strictly
 * under STRICT), it holds exactly the attempts reported as applied, and the key ends with the value written
 * under the highest token.
 */
class ConcurrentWritersIT {
    static final int THREADS = 8;
    static final int WRITES_PER_THREAD = 40;
    static final int ROUNDS = 5;
    static final List<String> KEYS = List.of("K-1", "K-2", "K-3");
    static final FencedScript SET_AND_RECORD = FencedScript.of("""
            redis.call('SET', KEYS[1], ARGV[1])
            redis.call('RPUSH', KEYS[2], ARGV[2])
            """);

    private static RedisFixture redis;
    private static final List<StatefulRedisConnection<String, String>> connections = new ArrayList<>();

    record Attempt(String key, long token, WriteOutcome outcome) {}

    @BeforeAll
    static void connect() {
        redis = new RedisFixture();
        for (int t = 0; t < THREADS; t++) {
            connections.add(redis.client.connect());
        }
    }

    @AfterAll
    static void disconnect() {
        connections.forEach(StatefulRedisConnection::close);
        redis.close();
    }

    @ParameterizedTest
    @EnumSource(FencePolicy.class)
    void everyKeyEndsWithTheValueOfItsHighestTokenAndItsHistoryNeverGoesBack(FencePolicy policy) throws Exception {
        Random random = new Random(policy.ordinal() * 7919L);
        for (int round = 0; round < ROUNDS; round++) {
            String prefix = "r" + round + policy + ":";
            // every token once per key, shuffled; under MONOTONIC some are offered twice
            List<Long> tokens = new ArrayList<>();
            for (long token = 1; token <= THREADS * WRITES_PER_THREAD; token++) {
                tokens.add(policy == FencePolicy.MONOTONIC && token % 5 == 0 ? token - 1 : token);
            }
            Collections.shuffle(tokens, random);
            ConcurrentLinkedQueue<Attempt> attempts = new ConcurrentLinkedQueue<>();
            CountDownLatch start = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                FencedRedis fenced = FencedRedis.builder(connections.get(thread))
                        .policy(policy)
                        .build();
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < WRITES_PER_THREAD; i++) {
                        long token = tokens.get(thread * WRITES_PER_THREAD + i);
                        String key = redis.key(prefix + KEYS.get((i + thread) % KEYS.size()));
                        WriteOutcome outcome = fenced.tryEval(
                                SET_AND_RECORD,
                                List.of(key, key + ":history"),
                                List.of("value-of-" + token, Long.toString(token)),
                                token);
                        attempts.add(new Attempt(key, token, outcome));
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : futures) {
                future.get(1, TimeUnit.MINUTES);
            }
            pool.shutdown();

            assertThat(attempts).hasSize(THREADS * WRITES_PER_THREAD);
            for (String name : KEYS) {
                String key = redis.key(prefix + name);
                List<Long> history = redis.plain.lrange(key + ":history", 0, -1).stream()
                        .map(Long::valueOf)
                        .collect(Collectors.toList());
                List<Long> applied = attempts.stream()
                        .filter(a -> a.key().equals(key) && a.outcome().isApplied())
                        .map(Attempt::token)
                        .sorted()
                        .collect(Collectors.toList());
                long highest = attempts.stream()
                        .filter(a -> a.key().equals(key))
                        .mapToLong(Attempt::token)
                        .max()
                        .orElseThrow();
                for (int i = 1; i < history.size(); i++) {
                    if (policy == FencePolicy.STRICT) {
                        assertThat(history.get(i))
                                .as("%s history %s", key, history)
                                .isGreaterThan(history.get(i - 1));
                    } else {
                        assertThat(history.get(i))
                                .as("%s history %s", key, history)
                                .isGreaterThanOrEqualTo(history.get(i - 1));
                    }
                }
                assertThat(history.stream().sorted().collect(Collectors.toList()))
                        .as("the applied attempts on %s are exactly Redis's history", key)
                        .isEqualTo(applied);
                assertThat(redis.plain.get(key)).as("round %d", round).isEqualTo("value-of-" + highest);
                assertThat(redis.storedToken(key)).isEqualTo(highest);
                for (Attempt attempt : attempts) {
                    if (attempt.key().equals(key) && attempt.outcome() instanceof WriteOutcome.Rejected rejected) {
                        assertThat(policy.admits(rejected.storedToken(), attempt.token()))
                                .as("a rejection reports a stored token that refuses the offered one: %s", attempt)
                                .isFalse();
                    }
                }
            }
        }
    }
}
