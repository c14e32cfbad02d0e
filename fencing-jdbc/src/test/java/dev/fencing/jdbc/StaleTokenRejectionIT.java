package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue test 1: a stale token is rejected and the row is unchanged, while the same write without the
 * fence goes through (so the fence is what saved the row); equal tokens follow the policy; the four
 * outcomes are told apart.
 */
class StaleTokenRejectionIT {
    static FencingDatabase db;
    static FencedTable inventory;

    FencedWriter strict;
    FencedWriter monotonic;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("stale_it", 4);
        inventory = db.inventory();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.reset("A-1", "A-2");
        strict = FencedWriter.builder(db.jdbi).build();
        monotonic = FencedWriter.builder(db.jdbi).policy(FencePolicy.MONOTONIC).build();
    }

    private static FencedUpdate take(int qty) {
        return FencedUpdate.builder(inventory)
                .key("A-1")
                .setExpression("stock", "stock - :qty")
                .where("stock >= :qty")
                .bind("qty", qty)
                .build();
    }

    @Test
    void rejectsAStaleUpdateAndLeavesTheRowUnchangedWhereTheUnfencedUpdateGoesThrough() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        strict = FencedWriter.builder(db.jdbi).meterRegistry(registry).build();

        // given: holder B (token 8) wrote after holder A (token 7) was paused
        assertThat(strict.tryUpdate(take(1), 8)).isEqualTo(new WriteOutcome.Applied(8));
        assertThat(db.row("A-1")).isEqualTo("9:8");

        // when: A's delayed write arrives
        WriteOutcome outcome = strict.tryUpdate(take(5), 7);

        // then: refused, with the stored token, and nothing changed
        assertThat(outcome).isEqualTo(new WriteOutcome.Rejected(8, 7));
        assertThat(db.row("A-1")).isEqualTo("9:8");
        assertThatThrownBy(() -> strict.update(take(5), 7))
                .isInstanceOfSatisfying(StaleFenceException.class, e -> {
                    assertThat(e.storedToken()).isEqualTo(8);
                    assertThat(e.offeredToken()).isEqualTo(7);
                    assertThat(e.table()).isEqualTo("public.inventory");
                    assertThat(e.key()).isEqualTo("A-1");
                    assertThat(e.tokensWentBackwards()).isFalse();
                })
                .hasMessageContaining("stored token 8, offered token 7");
        assertThat(db.row("A-1")).isEqualTo("9:8");
        assertThat(registry.get("fencing.jdbc.writes")
                        .tags("table", "public.inventory", "outcome", "rejected")
                        .counter()
                        .count())
                .isEqualTo(2);
        assertThat(registry.get("fencing.jdbc.writes")
                        .tags("table", "public.inventory", "outcome", "applied")
                        .counter()
                        .count())
                .isEqualTo(1);

        // and: the very same write without the fence is applied: the lost update the fence prevented
        takeWithoutFence(5);
        assertThat(db.row("A-1")).isEqualTo("4:8");
    }

    @Test
    void rejectsStaleUpsertsBatchesAndWatermarksWhereUnfencedWritesGoThrough() {
        FencedUpsert upsert =
                FencedUpsert.builder(inventory).key("A-9").value("stock", 3).build();
        assertThat(strict.tryUpsert(upsert, 20)).isEqualTo(new WriteOutcome.Applied(20)); // inserted
        assertThat(strict.tryUpsert(
                        FencedUpsert.builder(inventory)
                                .key("A-9")
                                .value("stock", 1)
                                .build(),
                        19))
                .isEqualTo(new WriteOutcome.Rejected(20, 19));
        assertThat(db.row("A-9")).isEqualTo("3:20");

        strict.update(take(1), 30);
        FencedBatch batch = FencedBatch.builder(inventory)
                .columns("stock")
                .add(29, RowKey.of("A-1"), 100) // stale
                .add(5, RowKey.of("A-2"), 200) // fresh for A-2
                .add(5, RowKey.of("nope"), 300)
                .build();
        assertThat(strict.tryBatch(batch))
                .containsExactly(
                        new WriteOutcome.Rejected(30, 29), new WriteOutcome.Applied(5), new WriteOutcome.NotFound(5));
        assertThat(db.row("A-1")).isEqualTo("9:30");
        assertThat(db.row("A-2")).isEqualTo("200:5");
        assertThatThrownBy(() -> strict.batch(FencedBatch.builder(inventory)
                        .columns("stock")
                        .add(6, RowKey.of("A-2"), 1)
                        .add(29, RowKey.of("A-1"), 1)
                        .build()))
                .isInstanceOf(StaleFenceException.class);
        assertThat(db.row("A-2"))
                .as("all or nothing: the fresh row rolled back")
                .isEqualTo("200:5");

        strict.advanceWatermarkAndRun("report.csv", 12, h -> null);
        WriteOutcome stale = db.jdbi.inTransaction(h -> strict.tryAdvanceWatermark(h, "report.csv", 11));
        assertThat(stale).isEqualTo(new WriteOutcome.Rejected(12, 11));
        assertThat(watermark("report.csv")).isEqualTo(12);

        // the same writes without the fence: nothing stops them
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE inventory SET stock = 100 WHERE sku = 'A-1'");
            h.execute("UPDATE inventory SET stock = 1 WHERE sku = 'A-9'");
        });
        assertThat(db.row("A-1")).isEqualTo("100:30");
        assertThat(db.row("A-9")).isEqualTo("1:20");
    }

    @Test
    void aStaleClaimRunsNothingWhereTheSameStatementsWithoutTheClaimGoThrough() {
        strict.update(take(1), 8);
        AtomicBoolean ran = new AtomicBoolean();

        assertThatThrownBy(() -> strict.claimAndRun(inventory, RowKey.of("A-1"), 7, h -> {
                    ran.set(true);
                    return h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 5)");
                }))
                .isInstanceOfSatisfying(StaleFenceException.class, e -> assertThat(e.storedToken())
                        .isEqualTo(8));
        assertThat(ran).isFalse();
        assertThat(reservations()).isZero();
        assertThat(db.row("A-1")).isEqualTo("9:8");

        // the same transaction without the claim: nothing stops it
        db.jdbi.useTransaction(h -> h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 5)"));
        assertThat(reservations()).isEqualTo(1);
    }

    @Test
    void equalTokensAreRefusedUnderStrictAndAcceptedUnderMonotonic() {
        strict.update(take(1), 5);

        assertThat(strict.tryUpdate(take(1), 5)).isEqualTo(new WriteOutcome.Rejected(5, 5));
        assertThat(db.row("A-1")).isEqualTo("9:5");
        assertThat(monotonic.tryUpdate(take(1), 5)).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(db.row("A-1")).isEqualTo("8:5");
        assertThat(monotonic.tryUpdate(take(1), 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
        assertThat(db.row("A-1")).isEqualTo("8:5");
        assertThat(monotonic.tryUpdate(take(1), 6)).isEqualTo(new WriteOutcome.Applied(6));
        assertThat(strict.tryUpdate(take(1), 7)).isEqualTo(new WriteOutcome.Applied(7));
        assertThat(db.row("A-1")).isEqualTo("6:7");
        assertThat(strict.tryUpdate(take(1), 7)).isEqualTo(new WriteOutcome.Rejected(7, 7));

        takeWithoutFence(1); // the replay that STRICT refused, without the fence
        assertThat(db.row("A-1")).isEqualTo("5:7");
    }

    @Test
    void tellsStaleApartFromMissingRowAndFalsePredicate() {
        strict.update(take(1), 3);

        assertThat(strict.tryUpdate(take(50), 4)).isEqualTo(new WriteOutcome.PredicateFailed(3, 4));
        assertThat(strict.tryUpdate(take(50), 2)).isEqualTo(new WriteOutcome.Rejected(3, 2));
        FencedUpdate missing = FencedUpdate.builder(inventory)
                .key("no-such-sku")
                .set("stock", 1)
                .build();
        assertThat(strict.tryUpdate(missing, 4)).isEqualTo(new WriteOutcome.NotFound(4));
        assertThatThrownBy(() -> strict.update(take(50), 4)).isInstanceOf(FencePredicateFailedException.class);
        assertThatThrownBy(() -> strict.update(missing, 4)).isInstanceOf(FencedRowNotFoundException.class);
        assertThat(db.row("A-1")).isEqualTo("9:3");

        takeWithoutFence(2); // the stale write (token 2) without the fence
        assertThat(db.row("A-1")).isEqualTo("7:3");
    }

    @Test
    void saysPlainlyWhenTheStoredTokenIsFarAboveTheOfferedOne() {
        // a lock whose parent node was deleted restarts its sequence: tokens go backwards
        strict.update(take(1), 5_000);

        assertThatThrownBy(() -> strict.update(take(1), 3))
                .isInstanceOfSatisfying(StaleFenceException.class, e -> assertThat(e.tokensWentBackwards())
                        .isTrue())
                .hasMessageContaining("stored token 5000, offered token 3")
                .hasMessageContaining("far above the offered one")
                .hasMessageContaining("token source went backwards");
        assertThat(db.row("A-1")).isEqualTo("9:5000");

        takeWithoutFence(1);
        assertThat(db.row("A-1")).isEqualTo("8:5000");
    }

    /** The same decrement as {@link #take}, as a plain UPDATE without the fence condition. */
    private static void takeWithoutFence(int qty) {
        int rows = db.jdbi.withHandle(
                h -> h.createUpdate("UPDATE inventory SET stock = stock - :qty WHERE sku = :sku AND stock >= :qty")
                        .bind("sku", "A-1")
                        .bind("qty", qty)
                        .execute());
        assertThat(rows).isEqualTo(1);
    }

    private static long reservations() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM reservation")
                .mapTo(Long.class)
                .one());
    }

    private static long watermark(String key) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT fence_token FROM fencing.watermark WHERE resource_key = ?")
                .bind(0, key)
                .mapTo(Long.class)
                .one());
    }

    @Test
    void aBatchWhoseRowsAreAllFreshIsAppliedWholeAndAStaleRowAmongThemIsReported() {
        // all fresh: the bare statement writes every row and nothing is read back
        FencedBatch fresh = twoRows(3, 7, 4, 8);
        assertThat(strict.tryBatch(fresh)).containsExactly(new WriteOutcome.Applied(3), new WriteOutcome.Applied(4));
        assertThat(db.row("A-1")).isEqualTo("7:3");
        assertThat(db.row("A-2")).isEqualTo("8:4");
        strict.batch(twoRows(5, 6, 5, 6));
        assertThat(db.row("A-1")).isEqualTo("6:5");

        // one stale row: the bare statement's partial write is rolled back, the reporting one says which
        FencedBatch mixed = twoRows(6, 1, 4, 2);
        assertThat(strict.tryBatch(mixed))
                .containsExactly(new WriteOutcome.Applied(6), new WriteOutcome.Rejected(5, 4));
        assertThat(db.row("A-1")).isEqualTo("1:6");
        assertThat(db.row("A-2")).isEqualTo("6:5");

        // the same stale row without the fence is written
        db.jdbi.useHandle(h -> h.execute("UPDATE inventory SET stock = 2 WHERE sku = 'A-2'"));
        assertThat(db.row("A-2")).isEqualTo("2:5");
    }

    @Test
    void aBatchCalledInsideTheCallersTransactionReportsTruthfullyAndCommitsWithIt() {
        strict.batch(twoRows(3, 7, 5, 8));

        // Jdbi hands the writer this thread's handle, already in the caller's transaction
        db.jdbi.useTransaction(h -> {
            FencedBatch mixed = twoRows(6, 1, 4, 2);
            assertThat(strict.tryBatch(mixed))
                    .containsExactly(new WriteOutcome.Applied(6), new WriteOutcome.Rejected(5, 4));
            h.execute("UPDATE inventory SET stock = stock + 100 WHERE sku = 'A-1'");
        });

        assertThat(db.row("A-1"))
                .as("the batch's row and the caller's statement commit together")
                .isEqualTo("101:6");
        assertThat(db.row("A-2")).isEqualTo("8:5");
    }

    /** A batch's outcomes are counted one by one, by kind, however the writer groups them. */
    @Test
    void aBatchCountsEachRowsOutcome() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        FencedWriter counted =
                FencedWriter.builder(db.jdbi).meterRegistry(registry).build();
        db.reset("A-1", "A-2", "A-3", "A-4");
        counted.batch(FencedBatch.builder(inventory)
                .columns("stock")
                .add(5, RowKey.of("A-3"), 1)
                .add(5, RowKey.of("A-4"), 1)
                .build());
        List<WriteOutcome> outcomes = counted.tryBatch(FencedBatch.builder(inventory)
                .columns("stock")
                .add(6, RowKey.of("A-1"), 2)
                .add(6, RowKey.of("A-2"), 2)
                .add(4, RowKey.of("A-3"), 2)
                .add(6, RowKey.of("B-0"), 2)
                .add(6, RowKey.of("A-4"), 2)
                .build());

        assertThat(outcomes)
                .containsExactly(
                        new WriteOutcome.Applied(6),
                        new WriteOutcome.Applied(6),
                        new WriteOutcome.Rejected(5, 4),
                        new WriteOutcome.NotFound(6),
                        new WriteOutcome.Applied(6));
        assertThat(count(registry, "applied")).isEqualTo(5);
        assertThat(count(registry, "rejected")).isEqualTo(1);
        assertThat(count(registry, "not_found")).isEqualTo(1);
    }

    private static double count(SimpleMeterRegistry registry, String outcome) {
        return registry.get("fencing.jdbc.writes")
                .tags("table", "public.inventory", "outcome", outcome)
                .counter()
                .count();
    }

    /** A batch of A-1 (its token and new stock) and A-2. */
    private static FencedBatch twoRows(long tokenA1, long stockA1, long tokenA2, long stockA2) {
        return FencedBatch.builder(inventory)
                .columns("stock")
                .add(tokenA1, RowKey.of("A-1"), stockA1)
                .add(tokenA2, RowKey.of("A-2"), stockA2)
                .build();
    }
}
