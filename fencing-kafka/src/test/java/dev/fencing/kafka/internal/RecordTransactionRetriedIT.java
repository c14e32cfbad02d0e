package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.CommitGroups.A;
import static dev.fencing.kafka.internal.CommitGroups.record;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.TransactionalRecordHandler;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.transaction.SerializableTransactionRunner;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A key-parallel record in its own transaction, in PostgreSQL through a Jdbi whose transaction handler runs a
 * transaction's callback again after a serialization failure ({@link SerializableTransactionRunner}): its handler
 * adds a header to the record it is given, then fails once with one. The second run of the transaction must hand the
 * handler the record as fetched, as a retry of the consumer's own does, not as the rolled-back attempt left it.
 */
class RecordTransactionRetriedIT {
    private static CommitGroups groups;

    @BeforeAll
    static void migrate() {
        groups = new CommitGroups("kafka_record_transaction_retried_it");
        groups.jdbi.setTransactionHandler(new SerializableTransactionRunner());
    }

    @AfterAll
    static void drop() {
        groups.close();
    }

    @Test
    void aRecordWhoseTransactionTheHandlerRunsAgainIsHandedToTheHandlerAsFetched() {
        ConsumerSettings settings = CommitGroups.settings("g");
        List<String> seen = new CopyOnWriteArrayList<>();
        TransactionalRecordHandler<Object, String, String> handler = (tx, r, token) -> {
            seen.add(r.headers().lastHeader("handled-by") == null ? "as fetched" : "changed by the rolled-back run");
            r.headers().add("handled-by", "inventory".getBytes(StandardCharsets.UTF_8));
            if (seen.size() == 1) {
                ((Handle) tx)
                        .execute("DO $$ BEGIN RAISE EXCEPTION 'could not serialize access'"
                                + " USING ERRCODE = 'serialization_failure'; END $$");
            }
        };
        RecordStep<String, String> step = new RecordStep<>(
                settings, handler, new StringDeserializer(), new StringDeserializer(), (r, reason, d) -> {});
        AtomicLong retries = new AtomicLong();
        KeyParallelWorker<String, String> worker =
                new KeyParallelWorker<>(settings, step, groups.store(), new AtomicInteger(), retries);

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition.Lane lane = pa.add(record(A, 0, "x", 5));

        worker.processGroup(CommitGroups.take(lane), System.nanoTime() + TimeUnit.MINUTES.toNanos(1));

        assertThat(retries).as("the consumer's own retries").hasValue(0);
        assertThat(seen)
                .as("the record each run of its transaction handed the handler")
                .containsExactly("as fetched", "as fetched");
        assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
    }
}
