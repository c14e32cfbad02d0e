package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.GroupRetryCancelledTest.A;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.B;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.record;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * below it, and its key without a row.
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
        RetryPolicy retry =
                new RetryPolicy(Duration.ofMillis(50), Duration.ofMillis(50), Duration.ofSeconds(60), true, e -> false);
        ConsumerSettings settings = new ConsumerSettings(
                "g",
                "c",
                List.of("t"),
                Map.of(),
                Map.of(),
                FencePolicy.MONOTONIC,
                StaleRecordPolicy.DROP,
                "t.dlq",
                Duration.ofMillis(100),
                Duration.ofSeconds(1),
                Duration.ofSeconds(1),
                1000,
                0,
                Duration.ofSeconds(1),
                4,
                100,
                10,
                Duration.ofSeconds(1),
                retry);
        List<String> calls = new CopyOnWriteArrayList<>();
        CountDownLatch xRunsAlone = new CountDownLatch(1);
        CountDownLatch xGoesOn = new CountDownLatch(1);
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
        @SuppressWarnings("unchecked") // the handler's transaction is the store's Handle, as FencedConsumer casts it
        RecordTransactions<Object> store =
                (RecordTransactions<Object>) (RecordTransactions<?>) new PostgresRecordTransactions(jdbi);
        KeyParallelWorker<String, String> worker =
                new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneA = pa.add(record(A, 0, "x", 5));
        ParallelPartition.Lane laneB = pb.add(record(B, 0, "y", 5));
        List<ParallelPartition.Taken> group = new ArrayList<>();
        pa.take(laneA, 10, group);
        pb.take(laneB, 10, group);

        CompletableFuture<Throwable> run = CompletableFuture.supplyAsync(() -> {
            try {
                worker.processGroup(group, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        assertThat(xRunsAlone.await(30, TimeUnit.SECONDS))
                .as("x runs alone after the group's rollback")
                .isTrue();
        pb.cancel(); // B revoked meanwhile
        xGoesOn.countDown();
        assertThat(run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        assertThat(calls).as("handler calls").containsExactly("x@0", "y@1", "x@0");
        assertThat(appliedOffset("x", A.partition())).as("x's applied offset").isEqualTo(0L);
        assertThat(appliedOffset("y", B.partition())).as("y's applied offset").isNull();
        assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
        assertThat(pb.inFlight()).as("B's records in flight").isZero();
        assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
    }

    private static Long appliedOffset(String key, int partition) {
        return jdbi.withHandle(h -> h.createQuery("SELECT applied_offset FROM fencing.kafka_watermark"
                        + " WHERE consumer_group = 'g' AND kafka_partition = ? AND record_key = ?")
                .bind(0, partition)
                .bind(1, key.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .mapTo(Long.class)
                .findOne()
                .orElse(null));
    }
}
