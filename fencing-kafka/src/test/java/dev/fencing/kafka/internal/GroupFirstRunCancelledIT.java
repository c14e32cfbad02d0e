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
 * A commit group [x of partition A, y of partition B, z of partition A] in its first run, one transaction in
 * PostgreSQL: x's handler holds until {@link Group#goesOn}, and B is revoked (cancelled) meanwhile. y has not
 * started: the revocation's wait for B's running handlers must not wait for it (that is, for x), and the group
 * must not start it at its turn. The group ends there and commits x; y stays unfinished (B's frontier below it,
 * its key without a row) for B's next owner, and z, not reached, goes back to its lane in A.
 */
class GroupFirstRunCancelledIT {
    private static CommitGroups groups;

    @BeforeAll
    static void migrate() {
        groups = new CommitGroups("kafka_group_first_run_cancelled_it");
    }

    @AfterAll
    static void drop() {
        groups.close();
    }

    @Test
    void aGroupDoesNotStartARecordOfAPartitionCancelledWhileAnEarlierRecordRan() throws Exception {
        Group group = new Group();
        group.assertHolding("x runs in the group");
        group.pb.cancel(); // B revoked meanwhile
        group.goOnAndAssertEnd();

        group.assertYGivenUpXAppliedAndZPutBack();
    }

    /**
     * The revocation of B while x of A runs in the group: once B is cancelled, y (not reached yet) is not running,
     * so the revocation's wait for B's running handlers ends at once, as KeyParallelRunner's drain waits for it,
     * however long x takes; had it waited for y (that is, for x), a slow x would stop the consumer with
     * HandlersStillRunningException for B, no handler of B running.
     */
    @Test
    void aRevocationDoesNotWaitForItsPartitionsRecordNotYetReachedInAGroupsFirstRun() throws Exception {
        Group group = new Group();
        group.assertHolding("x runs in the group");
        try {
            // the drain's first wait: y is still in flight (it waits for its turn), until the drain timeout
            assertThat(group.pb.awaitIdle(false, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100)))
                    .as("B idle while y waits for its turn")
                    .isFalse();
            group.pb.cancel(); // B revoked
            assertThat(group.pb.awaitIdle(true, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500)))
                    .as("no handler of B runs, x of A still running")
                    .isTrue();
            assertThat(group.pa.awaitIdle(true, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100)))
                    .as("A idle while x runs")
                    .isFalse();
            assertThat(group.calls).as("handler calls while x runs").containsExactly("x@0");
        } finally {
            group.goesOn.countDown();
        }
        assertThat(group.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        group.assertYGivenUpXAppliedAndZPutBack();
    }

    /**
     * A commit group [x of A, y of B, z of A] whose one transaction holds in x's handler until it goes on. Each run
     * has its own consumer group in the store.
     */
    private static final class Group extends CommitGroups.HeldGroup {
        final ParallelPartition.Lane laneZ;

        Group() {
            super(groups);
            ParallelPartition.Lane laneX = pa.add(record(A, 0, "x", 5));
            ParallelPartition.Lane laneY = pb.add(record(B, 0, "y", 5));
            laneZ = pa.add(record(A, 1, "z", 5));
            start(laneX, laneY, laneZ);
        }

        @Override
        void onCall(String key, String name) {
            if (key.equals("x")) {
                hold();
            }
        }

        /** After the group: y never ran and stays unfinished; x was applied and finished; z waits in its lane. */
        void assertYGivenUpXAppliedAndZPutBack() {
            assertThat(calls).as("handler calls").containsExactly("x@0");
            assertThat(appliedOffset("x", A)).as("x's applied offset").isEqualTo(0L);
            assertThat(appliedOffset("y", B)).as("y's applied offset").isNull();
            assertThat(appliedOffset("z", A)).as("z's applied offset").isNull();
            assertThat(pb.inFlight()).as("B's records in flight").isZero();
            assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
            assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
            assertThat(pa.resume(laneZ)).as("z back in its lane").isTrue();
            assertThat(pa.next(laneZ).record.offset())
                    .as("z's lane's next record")
                    .isEqualTo(1L);
        }
    }
}
