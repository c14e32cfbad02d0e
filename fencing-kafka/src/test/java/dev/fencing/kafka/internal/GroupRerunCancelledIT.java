package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.CommitGroups.A;
import static dev.fencing.kafka.internal.CommitGroups.B;
import static dev.fencing.kafka.internal.CommitGroups.record;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A commit group [x of partition A, y of partition B] is rolled back by y's handler (a failure the application
 * does not retry, thrown once) and rerun record by record in PostgreSQL; while x runs alone, B is revoked
 * (cancelled). Once x is done the rerun must not start y: a cancelled partition starts no record, the revocation
 * or close waiting for it would wait for a handler started after the partition was given up, and the partition's
 * next owner reads y from the committed offset. y stays unfinished (neither running nor queued), the frontier
 * below it, and its key without a row. Nor does the revocation wait for y while x runs: y has not started.
 */
class GroupRerunCancelledIT {
    private static CommitGroups groups;

    @BeforeAll
    static void migrate() {
        groups = new CommitGroups("kafka_group_rerun_cancelled_it");
    }

    @AfterAll
    static void drop() {
        groups.close();
    }

    @Test
    void aRerunDoesNotStartARecordOfAPartitionCancelledWhileAnEarlierRecordRan() throws Exception {
        Rerun rerun = new Rerun();
        rerun.assertHolding("x runs alone after the group's rollback");
        rerun.pb.cancel(); // B revoked meanwhile
        rerun.goOnAndAssertEnd();

        rerun.assertYGivenUpAndXApplied();
    }

    /**
     * The revocation of B while x of A runs alone in the rerun: once B is cancelled, y (waiting for its turn
     * behind x) is not running, so the revocation's wait for B's running handlers ends at once, as
     * KeyParallelRunner's drain waits for it, however long x takes; had it waited for y (that is, for x), a
     * slow x would stop the consumer with HandlersStillRunningException for B, no handler of B running.
     */
    @Test
    void aRevocationDoesNotWaitForItsPartitionsRecordWaitingInARerunBehindAnotherPartitionsRecord() throws Exception {
        Rerun rerun = new Rerun();
        rerun.assertHolding("x runs alone after the group's rollback");
        try {
            // the drain's first wait: y is still in flight (it waits for its turn), until the drain timeout
            assertThat(rerun.pb.awaitIdle(false, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100)))
                    .as("B idle while y waits for its turn")
                    .isFalse();
            rerun.pb.cancel(); // B revoked
            assertThat(rerun.pb.awaitIdle(true, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500)))
                    .as("no handler of B runs, x of A still running")
                    .isTrue();
            assertThat(rerun.calls).as("handler calls while x runs").containsExactly("x@0", "y@1", "x@0");
        } finally {
            rerun.goesOn.countDown();
        }
        assertThat(rerun.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        rerun.assertYGivenUpAndXApplied();
    }

    /**
     * A commit group [x of A, y of B] whose group transaction y's handler rolls back (once); in the rerun record by
     * record x's own transaction holds until it goes on. Each run has its own consumer group in the store.
     */
    private static final class Rerun extends CommitGroups.HeldGroup {
        Rerun() {
            super(groups);
            start(pa.add(record(A, 0, "x", 5)), pb.add(record(B, 0, "y", 5)));
        }

        @Override
        void onCall(String key, String name) {
            boolean again = calls.stream().filter(name::equals).count() > 1;
            if (key.equals("y") && !again) {
                throw new IllegalStateException("rate limited"); // rolls the group back, once
            }
            if (key.equals("x") && again) { // x's own transaction in the rerun
                hold();
            }
        }

        /** After the group: y never ran again and stays unfinished; x was applied and finished. */
        void assertYGivenUpAndXApplied() {
            assertThat(calls).as("handler calls").containsExactly("x@0", "y@1", "x@0");
            assertThat(appliedOffset("x", A)).as("x's applied offset").isEqualTo(0L);
            assertThat(appliedOffset("y", B)).as("y's applied offset").isNull();
            assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
            assertThat(pb.inFlight()).as("B's records in flight").isZero();
            assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
        }
    }
}
