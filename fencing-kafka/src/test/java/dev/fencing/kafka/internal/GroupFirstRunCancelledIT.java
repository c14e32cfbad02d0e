package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.GroupRetryCancelledTest.A;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.B;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.record;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.nio.charset.StandardCharsets;
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
 * A commit group [x of partition A, y of partition B, z of partition A] in its first run, one transaction in
 * PostgreSQL: x's handler holds until {@link Group#xGoesOn}, and B is revoked (cancelled) meanwhile. y has not
 * started: the revocation's wait for B's running handlers must not wait for it (that is, for x), and the group
 * must not start it at its turn. The group ends there and commits x; y stays unfinished (B's frontier below it,
 * its key without a row) for B's next owner, and z, not reached, goes back to its lane in A.
 */
class GroupFirstRunCancelledIT {
    private static PostgresEndpoint database;
    private static Jdbi jdbi;

    @BeforeAll
    static void migrate() {
        database = PostgresServers.shared().createDatabase("kafka_group_first_run_cancelled_it");
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
    void aGroupDoesNotStartARecordOfAPartitionCancelledWhileAnEarlierRecordRan() throws Exception {
        Group group = new Group();
        group.start();
        assertThat(group.xRuns.await(30, TimeUnit.SECONDS))
                .as("x runs in the group")
                .isTrue();
        group.pb.cancel(); // B revoked meanwhile
        group.xGoesOn.countDown();
        assertThat(group.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

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
        group.start();
        assertThat(group.xRuns.await(30, TimeUnit.SECONDS))
                .as("x runs in the group")
                .isTrue();
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
            group.xGoesOn.countDown();
        }
        assertThat(group.run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        group.assertYGivenUpXAppliedAndZPutBack();
    }

    /**
     * A commit group [x of A, y of B, z of A] whose one transaction holds in x's handler until {@link #xGoesOn}.
     * Each run has its own consumer group in the store.
     */
    private static final class Group {
        private static final AtomicInteger RUNS = new AtomicInteger();
        final String groupId = "g" + RUNS.incrementAndGet();
        final List<String> calls = new CopyOnWriteArrayList<>();
        final CountDownLatch xRuns = new CountDownLatch(1);
        final CountDownLatch xGoesOn = new CountDownLatch(1);
        final ParallelPartition pa = new ParallelPartition(A, null);
        final ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneZ;
        CompletableFuture<Throwable> run;

        void start() {
            ConsumerSettings settings = GroupRetryCancelledTest.settings(groupId);
            TransactionalRecordHandler<Object, String, String> handler = (tx, r, token) -> {
                calls.add(r.key() + "@" + r.partition());
                if (r.key().equals("x")) {
                    xRuns.countDown();
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

            ParallelPartition.Lane laneX = pa.add(record(A, 0, "x", 5));
            ParallelPartition.Lane laneY = pb.add(record(B, 0, "y", 5));
            laneZ = pa.add(record(A, 1, "z", 5));
            List<ParallelPartition.Taken> group = new ArrayList<>();
            pa.take(laneX, 10, group);
            pb.take(laneY, 10, group);
            pa.take(laneZ, 10, group);

            run = CompletableFuture.supplyAsync(() -> {
                try {
                    worker.processGroup(group, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
        }

        /** After the group: y never ran and stays unfinished; x was applied and finished; z waits in its lane. */
        void assertYGivenUpXAppliedAndZPutBack() {
            assertThat(calls).as("handler calls").containsExactly("x@0");
            assertThat(appliedOffset(groupId, "x", A.partition()))
                    .as("x's applied offset")
                    .isEqualTo(0L);
            assertThat(appliedOffset(groupId, "y", B.partition()))
                    .as("y's applied offset")
                    .isNull();
            assertThat(appliedOffset(groupId, "z", A.partition()))
                    .as("z's applied offset")
                    .isNull();
            assertThat(pb.inFlight()).as("B's records in flight").isZero();
            assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
            assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
            assertThat(pa.resume(laneZ)).as("z back in its lane").isTrue();
            assertThat(pa.next(laneZ).record.offset())
                    .as("z's lane's next record")
                    .isEqualTo(1L);
        }
    }

    private static Long appliedOffset(String groupId, String key, int partition) {
        return jdbi.withHandle(h -> h.createQuery("SELECT applied_offset FROM fencing.kafka_watermark"
                        + " WHERE consumer_group = ? AND kafka_partition = ? AND record_key = ?")
                .bind(0, groupId)
                .bind(1, partition)
                .bind(2, key.getBytes(StandardCharsets.UTF_8))
                .mapTo(Long.class)
                .findOne()
                .orElse(null));
    }
}
