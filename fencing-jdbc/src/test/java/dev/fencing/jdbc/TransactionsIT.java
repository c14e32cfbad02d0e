package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.transaction.TransactionIsolationLevel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 9, fencing-jdbc items 3, 5 and 6: how the writer's calls meet transactions. Claims and fenced writes
 * join this thread's handle (no second connection waiting on the first one's row lock, nothing committed
 * behind the caller's back); {@code batch()} is all or nothing inside a caller's transaction; and the races
 * READ COMMITTED resolves (a fenced write blocked behind a holder's uncommitted row) end as the fence says,
 * made deterministic by waiting until PostgreSQL reports the writer waiting on the lock.
 */
class TransactionsIT {
    /** A bound on every wait, so that a hang (the bug of item 3) fails the test instead of stalling the build. */
    static final long TIMEOUT_SECONDS = 30;

    static FencingDatabase db;
    static FencedTable inventory;
    static FencedWriter strict;
    static FencedWriter monotonic;

    ExecutorService executor;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("transactions_it", 4);
        // a write waiting on a lock its own thread holds through another connection would wait forever
        db.jdbi.useHandle(h -> h.execute("ALTER DATABASE "
                + h.createQuery("SELECT current_database()").mapTo(String.class).one()
                + " SET lock_timeout = '" + TIMEOUT_SECONDS + "s'"));
        db.pool.getHikariPoolMXBean().softEvictConnections();
        inventory = db.inventory();
        strict = FencedWriter.builder(db.jdbi).build();
        monotonic = FencedWriter.builder(db.jdbi).policy(FencePolicy.MONOTONIC).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.reset("A-1", "A-2");
        executor = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void stopThreads() {
        executor.shutdownNow();
    }

    private static FencedUpdate setStock(String sku, int stock) {
        return FencedUpdate.builder(inventory).key(sku).set("stock", stock).build();
    }

    @Test
    void aWriterCallInsideClaimAndRunUsesTheClaimsHandleInsteadOfWaitingOnItsRowLock() throws Exception {
        Future<WriteOutcome> run = executor.submit(() ->
                monotonic.claimAndRun(inventory, RowKey.of("A-1"), 5, h -> monotonic.tryUpdate(setStock("A-1", 3), 5)));

        assertThat(run.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(db.row("A-1")).isEqualTo("3:5");
    }

    @Test
    void claimAndRunInsideTheCallersTransactionCommitsAndRollsBackWithIt() {
        assertThatThrownBy(() -> db.jdbi.useTransaction(h -> {
                    strict.claimAndRun(inventory, RowKey.of("A-1"), 5, inner -> {
                        assertThat(inner).as("the caller's handle").isSameAs(h);
                        return inner.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 3)");
                    });
                    throw new IllegalStateException("the caller changes its mind");
                }))
                .hasMessage("the caller changes its mind");

        assertThat(db.row("A-1"))
                .as("the claim went with the caller's rollback")
                .isEqualTo("10:0");
        assertThat(reservations()).isZero();

        db.jdbi.useTransaction(h -> strict.claimAndRun(
                inventory,
                RowKey.of("A-1"),
                5,
                inner -> inner.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 3)")));
        assertThat(db.row("A-1")).isEqualTo("10:5");
        assertThat(reservations()).isEqualTo(1);
    }

    @Test
    void aFencedWriteBlockedBehindAHolderOfANewerTokenIsRejectedWithItsTokenOnceItCommits() throws Exception {
        try (Handle holder = db.jdbi.open()) {
            // given: a transaction holds A-1 at token 9, uncommitted
            holder.begin();
            holder.execute("UPDATE inventory SET stock = 9, last_fence_token = 9 WHERE sku = 'A-1'");

            // when: a fenced write under 8 meets the row lock, and the holder commits while it waits
            Future<WriteOutcome> stale = executor.submit(() -> strict.tryUpdate(setStock("A-1", 8), 8));
            awaitWaitersOnALock(1);
            holder.commit();

            // then: READ COMMITTED re-checks the fence against the committed row
            assertThat(stale.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteOutcome.Rejected(9, 8));
            assertThat(db.row("A-1")).isEqualTo("9:9");

            // the same race without the fence: the blocked write lands on top of the holder's
            holder.begin();
            holder.execute("UPDATE inventory SET stock = 10, last_fence_token = 10 WHERE sku = 'A-1'");
            Future<Integer> plain = executor.submit(
                    () -> db.jdbi.withHandle(h -> h.execute("UPDATE inventory SET stock = 8 WHERE sku = 'A-1'")));
            awaitWaitersOnALock(1);
            holder.commit();
            assertThat(plain.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(1);
            assertThat(db.row("A-1")).isEqualTo("8:10");
        }
    }

    /**
     * Under REPEATABLE READ (and SERIALIZABLE) a transaction reads the snapshot of its first statement, and
     * PostgreSQL does not re-check a row committed after it: a fenced write that meets such a row fails with
     * a serialization failure (SQLSTATE 40001) whatever its token, and writes nothing. A row committed before
     * the snapshot is fenced as usual.
     */
    @Test
    void underRepeatableReadAWriteThatMeetsARowCommittedAfterTheSnapshotFailsInsteadOfBeingApplied() {
        for (long token : new long[] {8, 10}) {
            db.reset("A-1", "A-2");
            db.jdbi.useHandle(h -> {
                h.execute("UPDATE inventory SET last_fence_token = 5 WHERE sku = 'A-1'");
                h.execute("UPDATE inventory SET last_fence_token = 9 WHERE sku = 'A-2'");
            });
            assertThatThrownBy(() -> db.jdbi.useTransaction(TransactionIsolationLevel.REPEATABLE_READ, h -> {
                        // the snapshot: A-1 at token 5, A-2 at 9
                        assertThat(h.createQuery("SELECT count(*) FROM inventory")
                                        .mapTo(Integer.class)
                                        .one())
                                .isEqualTo(2);
                        assertThat(strict.tryUpdate(setStock("A-2", 1), 8)).isEqualTo(new WriteOutcome.Rejected(9, 8));
                        // another transaction commits A-1 at token 9
                        executor.submit(() -> db.jdbi.useHandle(other -> other.execute(
                                        "UPDATE inventory SET stock = 9, last_fence_token = 9 WHERE sku = 'A-1'")))
                                .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                        strict.tryUpdate(setStock("A-1", 1), token);
                    }))
                    .as("token %d", token)
                    .isInstanceOf(FencedWriteException.class)
                    .rootCause()
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("40001"));
            assertThat(db.row("A-1")).isEqualTo("9:9");
        }
    }

    @Test
    void aHigherTokenWaitsForTheClaimAndWinsAfterItCommitsWhileALowerOneIsRefused() throws Exception {
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> order = new CopyOnWriteArrayList<>();

        Future<String> first = executor.submit(() -> strict.claimAndRun(inventory, RowKey.of("A-1"), 5, h -> {
            h.execute("UPDATE inventory SET stock = stock - 1 WHERE sku = 'A-1'");
            claimed.countDown();
            assertThat(release.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
            order.add("token 5");
            return "5 committed";
        }));
        assertThat(claimed.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        Future<String> second = executor.submit(() -> strict.claimAndRun(inventory, RowKey.of("A-1"), 6, h -> {
            order.add("token 6");
            h.execute("UPDATE inventory SET stock = stock - 1 WHERE sku = 'A-1'");
            return "6 committed";
        }));
        awaitWaitersOnALock(1);
        assertThat(order).as("token 6 waits for the row").isEmpty();
        release.countDown();

        assertThat(first.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo("5 committed");
        assertThat(second.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo("6 committed");
        assertThat(order).containsExactly("token 5", "token 6");
        assertThat(db.row("A-1")).isEqualTo("8:6");
        assertThatThrownBy(() -> strict.claimAndRun(inventory, RowKey.of("A-1"), 5, h -> "never"))
                .isInstanceOfSatisfying(StaleFenceException.class, e -> assertThat(e.storedToken())
                        .isEqualTo(6));
    }

    @Test
    void tryClaimHoldsTheRowUntilTheCallersTransactionEndsAndNeedsOne() throws Exception {
        assertThatThrownBy(() -> db.jdbi.useHandle(h -> strict.tryClaim(h, inventory, RowKey.of("A-1"), 5)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("needs an open transaction");

        try (Handle holder = db.jdbi.open()) {
            holder.begin();
            assertThat(strict.tryClaim(holder, inventory, RowKey.of("A-1"), 5)).isEqualTo(new WriteOutcome.Applied(5));
            assertThat(strict.tryClaim(holder, inventory, RowKey.of("A-1"), 4))
                    .isEqualTo(new WriteOutcome.Rejected(5, 4));
            assertThat(strict.tryClaim(holder, inventory, RowKey.of("nope"), 5))
                    .isEqualTo(new WriteOutcome.NotFound(5));
            Future<WriteOutcome> newer = executor.submit(() -> strict.tryUpdate(setStock("A-1", 1), 6));
            awaitWaitersOnALock(1);
            holder.execute("UPDATE inventory SET stock = 7 WHERE sku = 'A-1'");
            holder.commit();

            assertThat(newer.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteOutcome.Applied(6));
            assertThat(db.row("A-1")).isEqualTo("1:6");
        }
    }

    @Test
    void batchIsAllOrNothingInsideTheCallersTransactionToo() {
        db.jdbi.useTransaction(h -> {
            h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 1)");
            FencedBatch mixed = FencedBatch.builder(inventory)
                    .columns("stock")
                    .add(5, RowKey.of("A-1"), 1) // fresh
                    .add(5, RowKey.of("nope"), 2) // absent
                    .build();
            assertThatThrownBy(() -> strict.batch(mixed)).isInstanceOf(FencedRowNotFoundException.class);
            // the caller's transaction goes on, without the batch's fresh row
            h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 2)");
        });

        assertThat(db.row("A-1"))
                .as("the fresh row of the failed batch was not committed")
                .isEqualTo("10:0");
        assertThat(reservations()).isEqualTo(2);
    }

    @Test
    void theWatermarkAndItsEffectCommitTogetherAndAStaleHolderRunsNoEffect() {
        String result = strict.advanceWatermarkAndRun(
                "report:2024-06",
                7,
                h -> h.execute("INSERT INTO reservation (sku, qty) VALUES ('report', 7)") == 1 ? "written" : "no");
        assertThat(result).isEqualTo("written");

        assertThatThrownBy(() -> strict.advanceWatermarkAndRun(
                        "report:2024-06", 6, h -> h.execute("INSERT INTO reservation (sku, qty) VALUES ('report', 6)")))
                .isInstanceOfSatisfying(StaleFenceException.class, e -> assertThat(e.storedToken())
                        .isEqualTo(7));
        assertThatThrownBy(() -> strict.advanceWatermarkAndRun("report:2024-06", 8, h -> {
                    h.execute("INSERT INTO reservation (sku, qty) VALUES ('report', 8)");
                    throw new IllegalStateException("effect failed");
                }))
                .hasMessage("effect failed");

        assertThat(reservations()).as("only token 7's effect").isEqualTo(1);
        long watermark = db.jdbi.withHandle(
                h -> h.createQuery("SELECT fence_token FROM fencing.watermark WHERE resource_key = 'report:2024-06'")
                        .mapTo(Long.class)
                        .one());
        assertThat(watermark)
                .as("token 8's advance rolled back with its effect")
                .isEqualTo(7);
    }

    /**
     * A paused holder (token 7) whose watermark advanced before the next holder's (token 8): with its
     * effect in the same transaction, the next holder's advance waits for it, so the newer effect lands
     * last. Advancing first and applying the effect afterwards (check-then-act) lets the paused holder's
     * effect land on top of the newer one.
     */
    @Test
    void anEffectCommittedWithTheWatermarkLandsBeforeTheNextHoldersWhileCheckThenActLandsAfterIt() throws Exception {
        String write = "UPDATE inventory_plain SET updated_by = ? WHERE sku = 'A-1'";

        // with the effect in the watermark's transaction
        CountDownLatch advanced = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        Future<Integer> paused = executor.submit(() -> strict.advanceWatermarkAndRun("report", 7, h -> {
            advanced.countDown();
            assertThat(resume.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue(); // the pause
            return h.execute(write, "token 7");
        }));
        assertThat(advanced.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isTrue();
        Future<Integer> next =
                executor.submit(() -> strict.advanceWatermarkAndRun("report", 8, h -> h.execute(write, "token 8")));
        awaitWaitersOnALock(1);
        resume.countDown();
        assertThat(paused.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(next.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(reportWrittenBy()).isEqualTo("token 8");

        // check-then-act: the watermark in one transaction, the effect after it
        WriteOutcome stale = db.jdbi.inTransaction(h -> strict.tryAdvanceWatermark(h, "report-2", 7));
        WriteOutcome newer = db.jdbi.inTransaction(h -> strict.tryAdvanceWatermark(h, "report-2", 8));
        db.jdbi.useHandle(h -> h.execute(write, "token 8"));
        db.jdbi.useHandle(h -> h.execute(write, "token 7")); // the paused holder resumes
        assertThat(stale.isApplied()).isTrue();
        assertThat(newer.isApplied()).isTrue();
        assertThat(reportWrittenBy()).isEqualTo("token 7");
    }

    private static String reportWrittenBy() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT updated_by FROM inventory_plain WHERE sku = 'A-1'")
                .mapTo(String.class)
                .one());
    }

    private static void awaitWaitersOnALock(int waiters) {
        await().atMost(Duration.ofSeconds(TIMEOUT_SECONDS))
                .until(() -> db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity"
                                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'")
                                .mapTo(Integer.class)
                                .one())
                        >= waiters);
    }

    private static long reservations() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM reservation")
                .mapTo(Long.class)
                .one());
    }
}
