package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.CommitGroups.A;
import static dev.fencing.kafka.internal.CommitGroups.record;

import dev.fencing.kafka.TransactionalRecordHandler;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.SoftAssertions;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.transaction.SerializableTransactionRunner;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A commit group [x, y] of partition A, two new keys, in PostgreSQL through a Jdbi whose transaction handler runs a
 * transaction's callback again after a serialization failure ({@link SerializableTransactionRunner}, as Jdbi
 * recommends for SERIALIZABLE work): y's handler fails once with one. The group's transaction must not be run a second
 * time as if it were the first (its keys' state and its records' turns are the group's, kept across the attempt): each
 * record is applied once, with its handler's effect, and none of them is left counted as running.
 */
class GroupTransactionRetriedIT {
    private static CommitGroups groups;

    @BeforeAll
    static void migrate() {
        groups = new CommitGroups("kafka_group_transaction_retried_it");
        groups.jdbi.setTransactionHandler(new SerializableTransactionRunner());
        groups.jdbi.useHandle(h -> h.execute("CREATE TABLE effect (record_key text PRIMARY KEY)"));
    }

    @AfterAll
    static void drop() {
        groups.close();
    }

    @Test
    void aGroupWhoseTransactionTheHandlerRunsAgainAppliesEachRecordOnce() throws Exception {
        String groupId = "g";
        List<String> calls = new CopyOnWriteArrayList<>();
        TransactionalRecordHandler<Object, String, String> handler = (tx, r, token) -> {
            calls.add(r.key() + "@" + r.offset());
            Handle handle = (Handle) tx;
            if (r.key().equals("y") && calls.size() == 2) {
                handle.execute("DO $$ BEGIN RAISE EXCEPTION 'could not serialize access'"
                        + " USING ERRCODE = 'serialization_failure'; END $$");
            }
            handle.execute("INSERT INTO effect (record_key) VALUES (?)", r.key());
        };
        KeyParallelWorker<String, String> worker =
                CommitGroups.worker(CommitGroups.settings(groupId), handler, groups.store());

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition.Lane laneX = pa.add(record(A, 0, "x", 5));
        ParallelPartition.Lane laneY = pa.add(record(A, 1, "y", 5));

        worker.processGroup(CommitGroups.take(laneX, laneY), System.nanoTime() + TimeUnit.MINUTES.toNanos(1));

        SoftAssertions.assertSoftly(softly -> {
            try {
                softly.assertThat(pa.awaitIdle(true, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200)))
                        .as("no record of A counted as running after the group")
                        .isTrue();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            softly.assertThat(pa.inFlight()).as("A's records in flight").isZero();
            softly.assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(2L);
            softly.assertThat(effects()).as("the handlers' effects committed").containsExactlyInAnyOrder("x", "y");
            softly.assertThat(groups.appliedOffset(groupId, "x", A.partition()))
                    .as("x's applied offset")
                    .isEqualTo(0L);
            softly.assertThat(groups.appliedOffset(groupId, "y", A.partition()))
                    .as("y's applied offset")
                    .isEqualTo(1L);
        });
    }

    private static List<String> effects() {
        return groups.jdbi.withHandle(h -> h.createQuery("SELECT record_key FROM effect")
                .mapTo(String.class)
                .list());
    }
}
