package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.WatermarkStoreException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
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
    static final TopicPartition A = new TopicPartition("t", 0);
    static final TopicPartition B = new TopicPartition("t", 1);

    /** Key-parallel settings (4 workers) of group {@code groupId} whose records are retried every 50 ms for a minute. */
    static ConsumerSettings settings(String groupId) {
        RetryPolicy retry =
                new RetryPolicy(Duration.ofMillis(50), Duration.ofMillis(50), Duration.ofSeconds(60), true, e -> false);
        return new ConsumerSettings(
                groupId,
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
    }

    static ConsumerRecord<ByteBuffer, ByteBuffer> record(TopicPartition p, long offset, String key, long token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(token));
        return new ConsumerRecord<>(
                p.topic(),
                p.partition(),
                offset,
                0L,
                TimestampType.CREATE_TIME,
                -1,
                -1,
                ByteBuffer.wrap(key.getBytes(StandardCharsets.UTF_8)),
                ByteBuffer.wrap(("v" + offset).getBytes(StandardCharsets.UTF_8)),
                headers,
                Optional.empty());
    }

    @Test
    void aRetryCancelledWithItsPartitionPutsTheOtherPartitionsRecordsBackInOrder() throws Exception {
        ConsumerSettings settings = settings("g");
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch aFailed = new CountDownLatch(1);
        TransactionalRecordHandler<Object, String, String> handler =
                (tx, r, token) -> applied.add(r.partition() + "@" + r.offset());
        RecordStep<String, String> step = new RecordStep<>(
                settings, handler, new StringDeserializer(), new StringDeserializer(), (r, reason, d) -> {});
        RecordTransactions<Object> store = new RecordTransactions<>() {
            @Override
            public long applyOnce(
                    String g,
                    TopicPartition p,
                    byte[] key,
                    long offset,
                    long token,
                    FencePolicy policy,
                    Consumer<? super Object> work) {
                if (p.equals(A)) { // A's database connection is still down
                    aFailed.countDown();
                    throw new WatermarkStoreException("could not apply", new SQLException("I/O error", "08006"));
                }
                work.accept(null);
                return APPLIED;
            }

            @Override
            public long[] applyGroup(
                    String g,
                    List<GroupRecord> records,
                    FencePolicy policy,
                    long deadline,
                    GroupWork<? super Object> w) {
                return null; // rolled back by a lost connection: rerun record by record (PostgresCommitGroup)
            }
        };
        KeyParallelWorker<String, String> worker =
                new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneA = pa.add(record(A, 0, "a", 5));
        ParallelPartition.Lane laneB = pb.add(record(B, 0, "b", 5));
        assertThat(pb.add(record(B, 1, "b", 6))).isNull();
        List<ParallelPartition.Taken> group = new ArrayList<>();
        pa.take(laneA, 10, group);
        pb.take(laneB, 10, group);
        assertThat(pb.add(record(B, 2, "b", 7))).isNull(); // arrives while the group runs: waits in B's lane

        CompletableFuture<Throwable> run = CompletableFuture.supplyAsync(() -> {
            try {
                worker.processGroup(group, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        assertThat(aFailed.await(5, TimeUnit.SECONDS)).isTrue(); // A's record failed and waits to run again
        pa.cancel(); // A revoked (cooperative) or reset as stale; B stays owned
        Throwable thrown = run.get(5, TimeUnit.SECONDS);
        // KeyParallelRunner.runGroup catches exactly this and does nothing else (no fail(), no cancel of B)
        assertThat(thrown).isInstanceOf(KeyParallelWorker.RetryCancelled.class);
        assertThat(pb.cancelled()).isFalse();

        // runGroup's finally: B's lane has records left, so it is queued again, and its next group runs B's
        // records in offset order
        assertThat(pb.resume(laneB)).isTrue();
        List<ParallelPartition.Taken> next = new ArrayList<>();
        pb.take(laneB, 10, next);
        worker.processGroup(next, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));

        assertThat(applied)
                .as("records of key b applied in order, none left behind")
                .containsExactly("1@0", "1@1", "1@2");
        assertThat(pb.inFlight()).isZero();
        assertThat(pb.advance((k, t) -> {})).isEqualTo(3L);
    }
}
