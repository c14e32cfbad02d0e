package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.CommitGroups.A;
import static dev.fencing.kafka.internal.CommitGroups.B;
import static dev.fencing.kafka.internal.CommitGroups.record;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.WatermarkStoreException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A commit group spanning partitions A and B is rolled back by a transient failure and rerun record by record;
 * A's record fails transiently again and waits to run again; A is revoked (cancelled) meanwhile. The worker
 * gives up on A ({@code RetryCancelled}), and B's records of the group, which it did not reach, must go back
 * to the front of B's lane: B's next record of the same key then runs after them, not instead of them. Had
 * they been abandoned, the later record would run first and move the key's applied offset past them, so that
 * a replay would skip them as applied (the key-parallel proof's first fact).
 */
class GroupRetryCancelledTest {
    @Test
    void aRetryCancelledWithItsPartitionPutsTheOtherPartitionsRecordsBackInOrder() throws Exception {
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aFailed = new CountDownLatch(1);
        TransactionalRecordHandler<Object, String, String> handler =
                (tx, r, token) -> applied.add(r.partition() + "@" + r.offset());
        RecordTransactions<Object> store = CommitGroups.transactions(
                (p, work) -> {
                    if (p.equals(A)) { // A's database connection is still down
                        aFailed.countDown();
                        throw new WatermarkStoreException("could not apply", new SQLException("I/O error", "08006"));
                    }
                    work.accept(null);
                    return RecordTransactions.APPLIED;
                },
                () -> null); // rolled back by a lost connection: rerun record by record (PostgresCommitGroup)
        KeyParallelWorker<String, String> worker = CommitGroups.worker(CommitGroups.settings("g"), handler, store);

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneA = pa.add(record(A, 0, "a", 5));
        ParallelPartition.Lane laneB = pb.add(record(B, 0, "b", 5));
        assertThat(pb.add(record(B, 1, "b", 6))).isNull();
        List<ParallelPartition.Taken> group = CommitGroups.take(laneA, laneB);
        assertThat(pb.add(record(B, 2, "b", 7))).isNull(); // arrives while the group runs: waits in B's lane

        CompletableFuture<Throwable> run = CommitGroups.runAsync(worker, group, Duration.ofSeconds(1));
        assertThat(aFailed.await(5, TimeUnit.SECONDS)).isTrue(); // A's record failed and waits to run again
        pa.cancel(); // A revoked (cooperative) or reset as stale; B stays owned
        Throwable thrown = run.get(5, TimeUnit.SECONDS);
        // KeyParallelRunner.runGroup catches exactly this and does nothing else (no fail(), no cancel of B)
        assertThat(thrown).isInstanceOf(KeyParallelWorker.RetryCancelled.class);
        assertThat(pb.cancelled()).isFalse();

        // runGroup's finally: B's lane has records left, so it is queued again, and its next group runs B's
        // records in offset order
        assertThat(pb.resume(laneB)).isTrue();
        worker.processGroup(CommitGroups.take(laneB), System.nanoTime() + TimeUnit.SECONDS.toNanos(1));

        assertThat(applied)
                .as("records of key b applied in order, none left behind")
                .containsExactly("1@0", "1@1", "1@2");
        assertThat(pb.inFlight()).isZero();
        assertThat(pb.advance((k, t) -> {})).isEqualTo(3L);
    }
}
