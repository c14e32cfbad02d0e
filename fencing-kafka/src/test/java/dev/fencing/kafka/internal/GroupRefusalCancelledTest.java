package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.GroupRetryCancelledTest.A;
import static dev.fencing.kafka.internal.GroupRetryCancelledTest.B;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * A commit group [a of partition A, b of partition B], both without a fence token: the group refuses them before its
 * transaction, one after the other, each dead letter awaited. a's dead letter holds until {@link #aGoesOn}; B is
 * revoked (cancelled) meanwhile. b's refusal has not started: the revocation's wait for B's running handlers must not
 * wait for it (that is, for a's dead letter), and b must not be dead-lettered after B was given up (B's next owner
 * refuses it). b stays unfinished, B's frontier below it.
 */
class GroupRefusalCancelledTest {
    @Test
    void aRevocationDoesNotWaitForItsPartitionsRefusalBehindAnotherPartitionsDeadLetter() throws Exception {
        List<String> deadLettered = new CopyOnWriteArrayList<>();
        CountDownLatch aSent = new CountDownLatch(1);
        CountDownLatch aGoesOn = new CountDownLatch(1);
        ConsumerSettings settings = GroupRetryCancelledTest.settings("g");
        RecordStep<String, String> step = new RecordStep<>(
                settings, (tx, r, token) -> {}, new StringDeserializer(), new StringDeserializer(), (r, reason, d) -> {
                    String name = new String(r.key().array(), StandardCharsets.UTF_8) + "@" + r.partition();
                    deadLettered.add(name);
                    if (r.partition() == A.partition()) { // a's dead letter waits for its acknowledgement
                        aSent.countDown();
                        try {
                            assertThat(aGoesOn.await(30, TimeUnit.SECONDS)).isTrue();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(e);
                        }
                    }
                });
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
                throw new AssertionError("refused records reach no transaction");
            }

            @Override
            public long[] applyGroup(
                    String g,
                    List<GroupRecord> records,
                    FencePolicy policy,
                    long deadline,
                    GroupWork<? super Object> w) {
                throw new AssertionError("refused records reach no transaction");
            }
        };
        KeyParallelWorker<String, String> worker =
                new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneA = pa.add(tokenless(A, 0, "a"));
        ParallelPartition.Lane laneB = pb.add(tokenless(B, 0, "b"));
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
        assertThat(aSent.await(30, TimeUnit.SECONDS)).as("a's dead letter sent").isTrue();
        try {
            pb.cancel(); // B revoked
            assertThat(pb.awaitIdle(true, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500)))
                    .as("no record of B running, a's dead letter still unacknowledged")
                    .isTrue();
        } finally {
            aGoesOn.countDown();
        }
        assertThat(run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();

        assertThat(deadLettered).as("dead letters").containsExactly("a@0");
        assertThat(pa.advance((k, t) -> {})).as("A's frontier").isEqualTo(1L);
        assertThat(pb.inFlight()).as("B's records in flight").isZero();
        assertThat(pb.advance((k, t) -> {})).as("B's frontier").isEqualTo(0L);
    }

    private static ConsumerRecord<ByteBuffer, ByteBuffer> tokenless(TopicPartition p, long offset, String key) {
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
                new RecordHeaders(),
                Optional.empty());
    }
}
