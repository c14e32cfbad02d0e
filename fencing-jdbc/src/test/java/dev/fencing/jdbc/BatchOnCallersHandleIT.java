package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code tryBatch(handle, batch)} on a handle with no open transaction behaves like {@code tryBatch(batch)}: if
 * it throws, nothing of the batch was written.
 */
class BatchOnCallersHandleIT {
    private static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("batch_callers_handle_it", 2);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @AfterEach
    void dropTheSkippingTrigger() {
        db.jdbi.useHandle(h -> h.execute("DROP TRIGGER IF EXISTS skip_a2 ON inventory"));
    }

    /**
     * A BEFORE trigger that skips A-2 makes every attempt of the reporting statement write A-1 and not A-2,
     * until the writer gives up. On an auto-commit handle each attempt committed A-1, so the call threw while
     * A-1 stayed written under token 5.
     */
    @Test
    void aBatchThatFailsOnAnAutoCommitHandleLeavesNoRowWritten() {
        db.reset("A-1", "A-2");
        db.jdbi.useHandle(h -> {
            h.execute("CREATE OR REPLACE FUNCTION skip_a2() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN IF NEW.sku = 'A-2' THEN RETURN NULL; END IF; RETURN NEW; END $$");
            h.execute("CREATE TRIGGER skip_a2 BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION skip_a2()");
        });
        String before = db.row("A-1");
        FencedBatch batch = FencedBatch.builder(db.inventory())
                .columns("stock")
                .add(5, RowKey.of("A-1"), 1)
                .add(5, RowKey.of("A-2"), 1)
                .build();
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        assertThatThrownBy(() -> db.jdbi.useHandle(h -> writer.tryBatch(h, batch)))
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("nothing was written");

        assertThat(db.row("A-1")).as("A-1 after the failed batch").isEqualTo(before);
    }
}
