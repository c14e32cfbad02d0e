package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.GroupRetryCancelledTest.A;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.B;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.record;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
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
    private static PostgresEndpoint database;
    private static Jdbi jdbi;

    @BeforeAll
    static void migrate() {
        database = PostgresServers.shared().createDatabase("kafka_group_rerun_cancelled_it");
        Flyway.configure()
                .dataSource(database.jdbcUrl(), database.user(), database.password())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        jdbi = Jdbi.create(database.jdbcUrl(), database.user(), database.password());
    }

    @AfterAll
    static void drop() {
        database.close();
    }

    @Test
    void aRerunDoesNotStartARecordOfAPartitionCancelledWhileAnEarlierRecordRan() throws Exception {
        Rerun rerun = new Rerun();
        rerun.start();
        assertThat(rerun.xRunsAlone.await(30, TimeUnit.SECONDS))
                .as("x runs alone after the group's rollback")
                .isTrue();
        rerun.pb.cancel(); // B revoked meanwhile
        rerun.xGoesOn.countDown();
        assertThat(rerun.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

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
        rerun.start();
        assertThat(rerun.xRunsAlone.await(30, TimeUnit.SECONDS))
                .as("x runs alone after the group's rollback")
                .isTrue();
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
            rerun.xGoesOn.countDown();
        }
        assertThat(rerun.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        rerun.assertYGivenUpAndXApplied();
    }

    /**
     * A commit group [x of A, y of B] whose group transaction y's handler rolls back (once); in the rerun record by
     * record x's own transaction holds until {@link #xGoesOn}. Each run has its own consumer group in the store.
     */
    private static final class Rerun {
        private static final AtomicInteger RUNS = new AtomicInteger();
        final String groupId = "g" + RUNS.incrementAndGet();
        final List<String> calls = new CopyOnWriteArrayList<>();
        final CountDownLatch xRunsAlone = new CountDownLatch(1);
        final CountDownLatch xGoesOn = new CountDownLatch(1);
        final ParallelPartition pa = new ParallelPartition(A, null);
        final ParallelPartition pb = new ParallelPartition(B, null);
        CompletableFuture<Throwable> run;

        void start() {
            ConsumerSettings settings = GroupRetryCancelledTest.settings(groupId);
            TransactionalRecordHandler<Object, String, String> handler = (tx, r, token) -> {
                String name = r.key() + "@" + r.partition();
                calls.add(name);
                boolean again = calls.stream().filter(name::equals).count() > 1;
                if (r.key().equals("y") && !again) {
                    throw new IllegalStateException("rate limited"); // rolls the group back, once
                }
                if (r.key().equals("x") && again) { // x's own transaction in the rerun
                    xRunsAlone.countDown();
                    try {
                        assertThat(xGoesOn.await(30, TimeUnit.SECONDS)).isTrue();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
            };
            RecordStep<String, String> step = new RecordStep<>(
                    settings, handler, new StringDeserializer(), new StringDeserializer(), (r, reason, d) -> {});
            @SuppressWarnings(
                    "unchecked") // the handler's transaction is the store's Handle, as FencedConsumer casts it
            RecordTransactions<Object> store =
                    (RecordTransactions<Object>) (RecordTransactions<?>) new PostgresRecordTransactions(jdbi);
            KeyParallelWorker<String, String> worker =
                    new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());

            ParallelPartition.Lane laneA = pa.add(record(A, 0, "x", 5));
            ParallelPartition.Lane laneB = pb.add(record(B, 0, "y", 5));
            List<ParallelPartition.Taken> group = new ArrayList<>();
            pa.take(laneA, 10, group);
            pb.take(laneB, 10, group);

            run = CompletableFuture.supplyAsync(() -> {
                try {
                    worker.processGroup(group, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
        }

        /** After the group: y never ran again and stays unfinished; x was applied and finished. */
        void assertYGivenUpAndXApplied() {
            assertThat(calls).as("handler calls").containsExactly("x@0", "y@1", "x@0");
            assertThat(appliedOffset(groupId, "x", A.partition()))
                    .as("x's applied offset")
                    .isEqualTo(0L);
            assertThat(appliedOffset(groupId, "y", B.partition()))
                    .as("y's applied offset")
                    .isNull();
            assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
            assertThat(pb.inFlight()).as("B's records in flight").isZero();
            assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
        }
    }

    private static Long appliedOffset(String groupId, String key, int partition) {
        return jdbi.withHandle(h -> h.createQuery("SELECT applied_offset FROM fencing.kafka_watermark"
                        + " WHERE consumer_group = ? AND kafka_partition = ? AND record_key = ?")
                .bind(0, groupId)
                .bind(1, partition)
                .bind(2, key.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .mapTo(Long.class)
                .findOne()
                .orElse(null));
    }
}
