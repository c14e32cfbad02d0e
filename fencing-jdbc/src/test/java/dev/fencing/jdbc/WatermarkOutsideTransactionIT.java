package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * tryAdvanceWatermark(handle, ...) fences the caller's statements only when they share its transaction; on
 * an auto-commit handle the watermark would commit alone and the effect that follows would be
 * check-then-act. So it refuses such a handle, as tryClaim does.
 */
class WatermarkOutsideTransactionIT {
    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("wm_tx_it", 2);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    static long watermarkRows() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM fencing.watermark")
                .mapTo(Long.class)
                .one());
    }

    @Test
    void tryAdvanceWatermarkRefusesAHandleWithoutATransactionAsTryClaimDoesAndWritesNothing() {
        db.reset("A-1");
        FencedWriter writer =
                FencedWriter.builder(db.jdbi).policy(FencePolicy.STRICT).build();
        db.jdbi.useHandle(h -> {
            assertThat(h.isInTransaction()).isFalse();
            assertThatThrownBy(() -> writer.tryClaim(h, db.inventory(), RowKey.of("A-1"), 5))
                    .isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> writer.tryAdvanceWatermark(h, "report:1", 5))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("advanceWatermarkAndRun");
        });
        assertThat(watermarkRows()).isZero();
    }

    @Test
    void tryAdvanceWatermarkInsideTheCallersTransactionAdvancesIt() {
        db.reset();
        FencedWriter writer =
                FencedWriter.builder(db.jdbi).policy(FencePolicy.STRICT).build();
        WriteOutcome outcome = db.jdbi.inTransaction(h -> writer.tryAdvanceWatermark(h, "report:1", 5));
        assertThat(outcome).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(watermarkRows()).isEqualTo(1);
    }
}
