package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.RecordTransactions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A key's first record, run by two record transactions at once: a zombie's and the new owner's after a
 * rebalance, both reading from the last committed offset. A key with a row is locked by the transaction's
 * first statement; a key without one must be held too, or both handlers run, and a handler whose effect is
 * an insert under a unique key fails in the second (the consumer stops) instead of finding the record applied.
 * The second transaction is let go only once PostgreSQL shows it waiting on a lock, so the interleaving is
 * the same on every run.
 */
class KeyParallelNewKeyRaceIT {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final byte[] KEY = "sku-1".getBytes(StandardCharsets.UTF_8);
    private static final String GROUP = "new-key-race";
    private static PostgresFixture postgres;
    private RecordTransactions<Handle> transactions;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_new_key_race_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE effect (k TEXT PRIMARY KEY, kafka_offset BIGINT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @BeforeEach
    void empty() {
        postgres.jdbi.useHandle(h -> {
            h.execute("TRUNCATE effect");
            h.execute("TRUNCATE fencing.kafka_watermark");
        });
        transactions = PostgresWatermarkStore.create(postgres.jdbi).recordTransactions();
    }

    @Test
    void twoTransactionsOfANewKeysFirstRecordRunItsHandlerOnce() throws Exception {
        CountDownLatch firstWrote = new CountDownLatch(1);
        CountDownLatch letFirstCommit = new CountDownLatch(1);
        AtomicInteger handlerRuns = new AtomicInteger();
        // two threads of their own: the common pool may have one, which the first transaction keeps
        ExecutorService threads = Executors.newFixedThreadPool(2);
        CompletableFuture<Long> first = CompletableFuture.supplyAsync(
                () -> apply(5, h -> {
                    handlerRuns.incrementAndGet();
                    h.execute("INSERT INTO effect VALUES ('sku-1', 5)");
                    firstWrote.countDown();
                    hold(letFirstCommit);
                }),
                threads);
        assertThat(firstWrote.await(30, TimeUnit.SECONDS)).isTrue();
        int waitingBefore = lockWaits();

        CompletableFuture<Long> second = CompletableFuture.supplyAsync(
                () -> apply(5, h -> {
                    handlerRuns.incrementAndGet();
                    h.execute("INSERT INTO effect VALUES ('sku-1', 5)");
                }),
                threads);
        await().alias("the second transaction waits on a lock the first holds")
                .atMost(Duration.ofSeconds(30))
                .until(() -> lockWaits() > waitingBefore);
        letFirstCommit.countDown();

        assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(RecordTransactions.APPLIED);
        assertThat(second.get(30, TimeUnit.SECONDS))
                .as("the second finds the record applied by the first")
                .isEqualTo(RecordTransactions.APPLIED_BEFORE);
        assertThat(handlerRuns).hasValue(1);
        assertThat(stored()).isEqualTo("token 7, applied offset 5");
        threads.shutdown();
    }

    @Test
    void aFailedHandlerLeavesANewKeyWithoutARow() {
        assertThatThrownBy(() -> apply(5, h -> {
                    h.execute("INSERT INTO effect VALUES ('sku-1', 5)");
                    throw new IllegalStateException("handler failed");
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("handler failed");
        assertThat(stored()).isEqualTo("no row");

        assertThat(apply(5, h -> h.execute("INSERT INTO effect VALUES ('sku-1', 5)")))
                .as("the record runs again, since nothing of it was applied")
                .isEqualTo(RecordTransactions.APPLIED);
        assertThat(stored()).isEqualTo("token 7, applied offset 5");
    }

    @Test
    void aHandlerThatSwallowsItsFailedStatementDoesNotCountAsApplied() {
        // the failed statement aborts the transaction, whose COMMIT then rolls back: nothing of the record is
        // applied, and the record must not count as applied either
        assertThatThrownBy(() -> apply(5, h -> {
                    h.execute("INSERT INTO effect VALUES ('sku-1', 5)");
                    try {
                        h.execute("INSERT INTO effect VALUES ('sku-1', 5)");
                    } catch (RuntimeException swallowed) {
                        // a handler of the user's that goes on after a failed statement
                    }
                }))
                .isInstanceOf(WatermarkStoreException.class);
        assertThat(stored()).isEqualTo("no row");
    }

    private long apply(long offset, Consumer<Handle> work) {
        return transactions.applyOnce(GROUP, P0, KEY, offset, 7, FencePolicy.MONOTONIC, work);
    }

    /** Backends of this database waiting on a heavyweight lock (a row's or a transaction's). */
    private static int lockWaits() {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'")
                .mapTo(Integer.class)
                .one());
    }

    private static String stored() {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT 'token ' || fence_token || ', applied offset '"
                        + " || applied_offset FROM fencing.kafka_watermark WHERE consumer_group = :g")
                .bind("g", GROUP)
                .mapTo(String.class)
                .findOne()
                .orElse("no row"));
    }

    private static void hold(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never let go");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
