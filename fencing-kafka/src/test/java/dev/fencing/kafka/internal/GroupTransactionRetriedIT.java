package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.GroupRetryCancelledTest.A;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.record;

import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.assertj.core.api.SoftAssertions;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
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
    private static PostgresEndpoint database;
    private static Jdbi jdbi;

    @BeforeAll
    static void migrate() {
        database = PostgresServers.shared().createDatabase("kafka_group_transaction_retried_it");
        Flyway.configure()
                .dataSource(database.jdbcUrl(), database.user(), database.password())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        jdbi = Jdbi.create(database.jdbcUrl(), database.user(), database.password())
                .setTransactionHandler(new SerializableTransactionRunner());
        jdbi.useHandle(h -> h.execute("CREATE TABLE effect (record_key text PRIMARY KEY)"));
    }

    @AfterAll
    static void drop() {
        database.close();
    }

    @Test
    void aGroupWhoseTransactionTheHandlerRunsAgainAppliesEachRecordOnce() throws Exception {
        String groupId = "g";
        ConsumerSettings settings = GroupRetryCancelledTest.settings(groupId);
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
        RecordStep<String, String> step = new RecordStep<>(
                settings, handler, new StringDeserializer(), new StringDeserializer(), (r, reason, d) -> {});
        @SuppressWarnings("unchecked") // the handler's transaction is the store's Handle, as FencedConsumer casts it
        RecordTransactions<Object> store =
                (RecordTransactions<Object>) (RecordTransactions<?>) new PostgresRecordTransactions(jdbi);
        KeyParallelWorker<String, String> worker =
                new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition.Lane laneX = pa.add(record(A, 0, "x", 5));
        ParallelPartition.Lane laneY = pa.add(record(A, 1, "y", 5));
        List<ParallelPartition.Taken> group = new ArrayList<>();
        pa.take(laneX, 10, group);
        pa.take(laneY, 10, group);

        worker.processGroup(group, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));

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
            softly.assertThat(appliedOffset(groupId, "x"))
                    .as("x's applied offset")
                    .isEqualTo(0L);
            softly.assertThat(appliedOffset(groupId, "y"))
                    .as("y's applied offset")
                    .isEqualTo(1L);
        });
    }

    private static List<String> effects() {
        return jdbi.withHandle(h -> h.createQuery("SELECT record_key FROM effect")
                .mapTo(String.class)
                .list());
    }

    private static Long appliedOffset(String groupId, String key) {
        return jdbi.withHandle(h -> h.createQuery("SELECT applied_offset FROM fencing.kafka_watermark"
                        + " WHERE consumer_group = ? AND kafka_partition = ? AND record_key = ?")
                .bind(0, groupId)
                .bind(1, A.partition())
                .bind(2, key.getBytes(StandardCharsets.UTF_8))
                .mapTo(Long.class)
                .findOne()
                .orElse(null));
    }
}
