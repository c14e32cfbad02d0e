package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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
 * Issue test 2: eight threads write the same rows with interleaved tokens. Every accepted write appends
 * its token to the row's {@code history} in the same statement, so the history is the order in which the
 * database applied them: under STRICT it must rise strictly, under MONOTONIC never fall, it must hold
 * exactly the attempts reported as applied, and the stored token must be the highest accepted one.
 */
class ConcurrentWritersIT {
    static final int THREADS = 8;
    static final int ROUNDS = 40;
    static final List<String> ROWS = List.of("R-1", "R-2", "R-3");

    static FencingDatabase db;
    static FencedTable inventory;

    record Attempt(String row, long token, WriteOutcome outcome) {}

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("concurrent_it", THREADS);
        inventory = db.inventory();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @ParameterizedTest
    @EnumSource(FencePolicy.class)
    void acceptedTokensNeverGoBackOnARow(FencePolicy policy) throws Exception {
        // given
        db.reset(ROWS.toArray(String[]::new));
        FencedWriter writer = FencedWriter.builder(db.jdbi).policy(policy).build();
        ConcurrentLinkedQueue<Attempt> attempts = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);

        // when: thread t offers tokens round*4 + t%4 + 1, so threads t and t+4 offer the same tokens and
        // every thread's tokens interleave with the others'; rows are visited in a thread-specific order
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int thread = t;
            futures.add(pool.submit(() -> {
                start.await();
                for (int round = 0; round < ROUNDS; round++) {
                    long token = round * 4L + thread % 4 + 1;
                    for (int i = 0; i < ROWS.size(); i++) {
                        String row = ROWS.get((i + thread) % ROWS.size());
                        FencedUpdate update = FencedUpdate.builder(inventory)
                                .key(row)
                                .setExpression("history", "history || :token")
                                .set("updated_by", "thread-" + thread)
                                .bind("token", token)
                                .build();
                        attempts.add(new Attempt(row, token, writer.tryUpdate(update, token)));
                    }
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> future : futures) {
            future.get(2, TimeUnit.MINUTES);
        }
        pool.shutdown();

        // then
        assertThat(attempts).hasSize(THREADS * ROUNDS * ROWS.size());
        if (policy == FencePolicy.STRICT) {
            // threads t and t+4 offer the same tokens: under STRICT a token writes a row at most once, so
            // at most one of each pair's attempts on a row is applied (without the fence both could be)
            Map<String, Long> appliedPerRowAndToken = attempts.stream()
                    .filter(a -> a.outcome().isApplied())
                    .collect(Collectors.groupingBy(a -> a.row() + "@" + a.token(), Collectors.counting()));
            assertThat(appliedPerRowAndToken).allSatisfy((rowAndToken, applied) -> assertThat(applied)
                    .as("applied attempts of %s", rowAndToken)
                    .isEqualTo(1));
        }
        for (String row : ROWS) {
            List<Long> history = history(row);
            List<Long> accepted = attempts.stream()
                    .filter(a -> a.row().equals(row) && a.outcome().isApplied())
                    .map(Attempt::token)
                    .sorted()
                    .collect(Collectors.toList());
            for (int i = 1; i < history.size(); i++) {
                if (policy == FencePolicy.STRICT) {
                    assertThat(history.get(i))
                            .as("row %s history %s", row, history)
                            .isGreaterThan(history.get(i - 1));
                } else {
                    assertThat(history.get(i))
                            .as("row %s history %s", row, history)
                            .isGreaterThanOrEqualTo(history.get(i - 1));
                }
            }
            assertThat(history.stream().sorted().collect(Collectors.toList()))
                    .as("the applied attempts of %s are exactly the database's history", row)
                    .isEqualTo(accepted);
            long highest = accepted.get(accepted.size() - 1);
            assertThat(storedToken(row)).isEqualTo(highest).isEqualTo(ROUNDS * 4L);
            for (Attempt attempt : attempts) {
                if (attempt.row().equals(row) && attempt.outcome() instanceof WriteOutcome.Rejected rejected) {
                    assertThat(policy.admits(rejected.storedToken(), attempt.token()))
                            .as("a rejection reports a stored token that refuses the offered one: %s", attempt)
                            .isFalse();
                }
            }
        }
        Map<Boolean, Long> byApplied = attempts.stream()
                .collect(Collectors.partitioningBy(a -> a.outcome().isApplied(), Collectors.counting()));
        assertThat(byApplied.get(true)).isPositive();
    }

    private static List<Long> history(String row) {
        Long[] values = db.jdbi.withHandle(h -> h.createQuery("SELECT history FROM inventory WHERE sku = ?")
                .bind(0, row)
                .mapTo(Long[].class)
                .one());
        return Arrays.asList(values);
    }

    private static long storedToken(String row) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT last_fence_token FROM inventory WHERE sku = ?")
                .bind(0, row)
                .mapTo(Long.class)
                .one());
    }
}
