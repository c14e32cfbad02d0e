package dev.fencing.kafka.internal;

import static dev.fencing.kafka.internal.CommitGroups.A;
import static dev.fencing.kafka.internal.CommitGroups.B;
import static dev.fencing.kafka.internal.CommitGroups.tokenless;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
        RecordStep.DeadLetterSink deadLetters = (r, reason, d) -> {
            String name = new String(r.key().array(), StandardCharsets.UTF_8) + "@" + r.partition();
            deadLettered.add(name);
            if (r.partition() == A.partition()) { // a's dead letter waits for its acknowledgement
                aSent.countDown();
                CommitGroups.hold(aGoesOn);
            }
        };
        RecordTransactions<Object> store = CommitGroups.transactions(
                (p, work) -> {
                    throw new AssertionError("refused records reach no transaction");
                },
                () -> {
                    throw new AssertionError("refused records reach no transaction");
                });
        KeyParallelWorker<String, String> worker =
                CommitGroups.worker(CommitGroups.settings("g"), (tx, r, token) -> {}, deadLetters, store);

        ParallelPartition pa = new ParallelPartition(A, null);
        ParallelPartition pb = new ParallelPartition(B, null);
        ParallelPartition.Lane laneA = pa.add(tokenless(A, 0, "a"));
        ParallelPartition.Lane laneB = pb.add(tokenless(B, 0, "b"));

        CompletableFuture<Throwable> run =
                CommitGroups.runAsync(worker, CommitGroups.take(laneA, laneB), Duration.ofMinutes(1));
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
}
