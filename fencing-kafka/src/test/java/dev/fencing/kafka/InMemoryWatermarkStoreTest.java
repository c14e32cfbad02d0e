package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

class InMemoryWatermarkStoreTest {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final Executor NEW_THREAD = task -> new Thread(task).start();

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void remembersOffsetsAndWatermarksPerGroupAndPartition() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        assertThat(store.load("g", P0)).isEqualTo(PartitionState.EMPTY);

        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 10, Map.of(key("a"), 5L))));

        PartitionState state = store.load("g", P0);
        assertThat(state.nextOffset()).isEqualTo(10);
        assertThat(state.watermarks()).containsExactly(Map.entry(key("a"), 5L));
        assertThat(store.load("other-group", P0)).isEqualTo(PartitionState.EMPTY);
        assertThat(store.load("g", new TopicPartition("orders", 1))).isEqualTo(PartitionState.EMPTY);
    }

    @Test
    void neverLowersAWatermark() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 9L))));

        store.commit("g", tx -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 4L))));

        assertThat(store.load("g", P0).watermarks()).containsEntry(key("a"), 9L);
    }

    @Test
    void refusesABatchFromAConsumerThatLoadedAnOlderOffset() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 10, Map.of())));

        // a zombie that loaded the partition before offset 10 was stored
        assertThatThrownBy(
                        () -> store.commit("g", tx -> List.of(new PartitionProgress(P0, -1, 4, Map.of(key("a"), 1L)))))
                .isInstanceOf(PartitionTakenOverException.class)
                .hasMessageContaining("expected stored offset -1 but found 10");

        assertThat(store.load("g", P0).nextOffset()).isEqualTo(10);
        assertThat(store.size()).isZero();
    }

    @Test
    void aSecondPartitionLockWaitsUntilTheFirstUnitEndsAndThenFailsItsOffsetCheck() throws Exception {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        CountDownLatch firstLocked = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        CompletableFuture<Void> first = CompletableFuture.runAsync(
                () -> store.commit("g", tx -> {
                    store.lockPartition(tx, "g", P0, -1);
                    firstLocked.countDown();
                    awaitLatch(finishFirst);
                    return List.of(new PartitionProgress(P0, -1, 5, Map.of(key("a"), 7L)));
                }),
                NEW_THREAD);
        assertThat(firstLocked.await(30, TimeUnit.SECONDS)).isTrue();

        // a zombie that loaded the partition before the first unit commits
        AtomicReference<Thread> second = new AtomicReference<>();
        CompletableFuture<Void> zombie = CompletableFuture.runAsync(
                () -> store.commit("g", tx -> {
                    second.set(Thread.currentThread());
                    store.lockPartition(tx, "g", P0, -1);
                    return List.of(new PartitionProgress(P0, -1, 2, Map.of(key("a"), 3L)));
                }),
                NEW_THREAD);
        await().until(() -> second.get() != null && second.get().getState() == Thread.State.TIMED_WAITING);
        assertThat(zombie).isNotDone();

        finishFirst.countDown();
        first.get(30, TimeUnit.SECONDS);
        assertThatThrownBy(() -> zombie.get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(PartitionTakenOverException.class)
                .hasMessageContaining("expected stored offset -1 but found 5");
        assertThat(store.load("g", P0).watermarks()).containsExactly(Map.entry(key("a"), 7L));
    }

    @Test
    void aUnitThatFailsReleasesItsPartitionLocks() throws Exception {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        assertThatThrownBy(() -> store.commit("g", tx -> {
                    store.lockPartition(tx, "g", P0, -1);
                    throw new IllegalStateException("handler failed");
                }))
                .hasMessage("handler failed");

        // another thread: the partition lock is reentrant, so only another thread would wait on a leaked one
        CompletableFuture.runAsync(
                        () -> store.commit("g", tx -> {
                            store.lockPartition(tx, "g", P0, -1);
                            return List.of(new PartitionProgress(P0, -1, 1, Map.of()));
                        }),
                        NEW_THREAD)
                .get(30, TimeUnit.SECONDS);
        assertThat(store.load("g", P0).nextOffset()).isEqualTo(1);
    }

    @Test
    void aPartitionLockOutOfOrderFailsAtOnceInsteadOfWaitingSoTwoUnitsNeverDeadlock() throws Exception {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        TopicPartition p1 = new TopicPartition("orders", 1);
        CountDownLatch p0Locked = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        CompletableFuture<Void> first = CompletableFuture.runAsync(
                () -> store.commit("g", tx -> {
                    store.lockPartition(tx, "g", P0, -1);
                    p0Locked.countDown();
                    awaitLatch(finishFirst);
                    return List.of();
                }),
                NEW_THREAD);
        assertThat(p0Locked.await(30, TimeUnit.SECONDS)).isTrue();

        // this unit holds p1 (locked in an earlier poll) and now needs p0, which the first unit holds
        assertThatThrownBy(() -> store.commit("g", tx -> {
                    store.lockPartition(tx, "g", p1, -1);
                    store.lockPartition(tx, "g", P0, -1);
                    return List.of();
                }))
                .isInstanceOf(PartitionTakenOverException.class)
                .hasMessageContaining("another unit of work holds its lock");

        finishFirst.countDown();
        first.get(30, TimeUnit.SECONDS);
    }

    @Test
    void aPartitionLockWaitsForAHungUnitAtMostTheLockTimeoutAndIsRefusedAsTakenOver() throws Exception {
        InMemoryWatermarkStore hung = new InMemoryWatermarkStore(Duration.ofMillis(200));
        CountDownLatch p0Locked = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        CompletableFuture<Void> first = CompletableFuture.runAsync(
                () -> hung.commit("g", tx -> {
                    hung.lockPartition(tx, "g", P0, -1);
                    p0Locked.countDown();
                    awaitLatch(finishFirst);
                    return List.of();
                }),
                NEW_THREAD);
        assertThat(p0Locked.await(30, TimeUnit.SECONDS)).isTrue();

        // the first unit never ends while this one waits: only the lock timeout lets it go
        try {
            assertThatThrownBy(() -> hung.commit("g", tx -> {
                        hung.lockPartition(tx, "g", P0, -1);
                        return List.of();
                    }))
                    .isInstanceOf(PartitionTakenOverException.class)
                    .hasMessageContaining("another unit of work holds its lock (waited PT0.2S");
        } finally {
            finishFirst.countDown();
        }
        first.get(30, TimeUnit.SECONDS);
    }

    @Test
    void aPartitionLockTimeoutOutsideItsRangeIsRefusedNamingIt() {
        assertThatThrownBy(() -> new InMemoryWatermarkStore(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lockTimeout must be from 1 ms to 24 hours, got PT0S");
        assertThatThrownBy(() -> new InMemoryWatermarkStore(Duration.ofHours(25)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lockTimeout must be from 1 ms to 24 hours, got PT25H");
    }

    @Test
    void refusesAPartitionLockOutsideACommit() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();

        assertThatThrownBy(() -> store.lockPartition(null, "g", P0, -1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("outside the work of commit");
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void recordsTheFirstTopicIdOfEachGroupAndTopicAndReturnsItThereafter() {
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        Uuid first = Uuid.randomUuid();
        Uuid recreated = Uuid.randomUuid();

        assertThat(store.recordTopicId("g", "orders", first)).contains(first);
        assertThat(store.recordTopicId("g", "orders", recreated)).contains(first);
        assertThat(store.recordTopicId("other", "orders", recreated)).contains(recreated);
        assertThat(store.recordTopicId("g", "payments", recreated)).contains(recreated);
    }
}
