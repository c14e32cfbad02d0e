package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.PostgresFixture;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;

/**
 * What the tests of a commit group run by {@link KeyParallelWorker#processGroup} share: partitions A and B of topic
 * {@code t}, their settings and records, a worker over a handler and a store, the group taken from lanes and run on
 * another thread, and a handler's hold. An instance is a migrated database for a {@link PostgresRecordTransactions}
 * store, with the applied offsets it keeps, and runs {@link HeldGroup}s on it.
 */
final class CommitGroups implements AutoCloseable {
    static final TopicPartition A = new TopicPartition("t", 0);
    static final TopicPartition B = new TopicPartition("t", 1);

    private static final AtomicInteger RUNS = new AtomicInteger();

    private final PostgresFixture postgres;
    final Jdbi jdbi;

    /** A fresh database named {@code name} on the JVM's shared PostgreSQL, migrated with the fencing migrations. */
    CommitGroups(String name) {
        postgres = new PostgresFixture(name);
        jdbi = postgres.jdbi;
    }

    @Override
    public void close() {
        postgres.close();
    }

    /** The store on this database, its transaction the Handle the handler gets, as FencedConsumer casts it. */
    @SuppressWarnings("unchecked")
    RecordTransactions<Object> store() {
        return (RecordTransactions<Object>) (RecordTransactions<?>) new PostgresRecordTransactions(jdbi);
    }

    /** The offset the store holds as applied for {@code key} of {@code partition} in {@code groupId}, or null. */
    Long appliedOffset(String groupId, String key, int partition) {
        return jdbi.withHandle(h -> h.createQuery("SELECT applied_offset FROM fencing.kafka_watermark"
                        + " WHERE consumer_group = ? AND kafka_partition = ? AND record_key = ?")
                .bind(0, groupId)
                .bind(1, partition)
                .bind(2, key.getBytes(StandardCharsets.UTF_8))
                .mapTo(Long.class)
                .findOne()
                .orElse(null));
    }

    /**
     * A commit group of partitions A and B run on another thread by a worker over a database's store, in a consumer
     * group of its own: the handler records each call as key@partition in {@link #calls}, then does what
     * {@link #onCall} says, which may be to {@link #hold()}.
     */
    abstract static class HeldGroup {
        private final CommitGroups database;
        final String groupId = "g" + RUNS.incrementAndGet();
        final List<String> calls = new CopyOnWriteArrayList<>();
        final CountDownLatch holding = new CountDownLatch(1);
        final CountDownLatch goesOn = new CountDownLatch(1);
        final ParallelPartition pa = new ParallelPartition(A, null);
        final ParallelPartition pb = new ParallelPartition(B, null);
        CompletableFuture<Throwable> run;

        HeldGroup(CommitGroups database) {
            this.database = database;
        }

        /** What the handler does at a call of {@code key}, named {@code name} in {@link #calls}, after recording it. */
        abstract void onCall(String key, String name);

        /** In the handler: counts down {@link #holding} and waits until {@link #goesOn}. */
        final void hold() {
            holding.countDown();
            CommitGroups.hold(goesOn);
        }

        /** Runs the group of the records of {@code lanes}, in this order, within a minute. */
        final void start(ParallelPartition.Lane... lanes) {
            TransactionalRecordHandler<Object, String, String> handler = (tx, r, token) -> {
                String name = r.key() + "@" + r.partition();
                calls.add(name);
                onCall(r.key(), name);
            };
            run = runAsync(worker(settings(groupId), handler, database.store()), take(lanes), Duration.ofMinutes(1));
        }

        /** Asserts, as {@code description}, that the handler holds (within 30 seconds). */
        final void assertHolding(String description) throws InterruptedException {
            assertThat(holding.await(30, TimeUnit.SECONDS)).as(description).isTrue();
        }

        /** Lets the handler go on and asserts that the group ends (within 30 seconds) without a failure. */
        final void goOnAndAssertEnd() throws Exception {
            goesOn.countDown();
            assertThat(run.get(30, TimeUnit.SECONDS)).as("the group's end").isNull();
        }

        /** The offset the store holds as applied for {@code key} of {@code partition} in this group, or null. */
        final Long appliedOffset(String key, TopicPartition partition) {
            return database.appliedOffset(groupId, key, partition.partition());
        }
    }

    /**
     * A store without a database: a record's own transaction is {@code once} of its partition and its work, a
     * group's transaction {@code group}.
     */
    static RecordTransactions<Object> transactions(
            BiFunction<TopicPartition, Consumer<? super Object>, Long> once, Supplier<long[]> group) {
        return new RecordTransactions<>() {
            @Override
            public long applyOnce(
                    String g,
                    TopicPartition p,
                    byte[] key,
                    long offset,
                    long token,
                    FencePolicy policy,
                    Consumer<? super Object> work) {
                return once.apply(p, work);
            }

            @Override
            public long[] applyGroup(
                    String g,
                    List<GroupRecord> records,
                    FencePolicy policy,
                    long deadline,
                    GroupWork<? super Object> w) {
                return group.get();
            }
        };
    }

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

    /** The record at {@code offset} of {@code p} with key {@code key}, value "v" + offset, fenced with {@code token}. */
    static ConsumerRecord<ByteBuffer, ByteBuffer> record(TopicPartition p, long offset, String key, long token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(token));
        return record(p, offset, key, headers);
    }

    /** The record at {@code offset} of {@code p} with key {@code key} and value "v" + offset, without a fence token. */
    static ConsumerRecord<ByteBuffer, ByteBuffer> tokenless(TopicPartition p, long offset, String key) {
        return record(p, offset, key, new RecordHeaders());
    }

    private static ConsumerRecord<ByteBuffer, ByteBuffer> record(
            TopicPartition p, long offset, String key, RecordHeaders headers) {
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

    /** A worker of string records over {@code handler} and {@code store}, its dead letters to {@code deadLetters}. */
    static KeyParallelWorker<String, String> worker(
            ConsumerSettings settings,
            TransactionalRecordHandler<Object, String, String> handler,
            RecordStep.DeadLetterSink deadLetters,
            RecordTransactions<Object> store) {
        RecordStep<String, String> step =
                new RecordStep<>(settings, handler, new StringDeserializer(), new StringDeserializer(), deadLetters);
        return new KeyParallelWorker<>(settings, step, store, new AtomicInteger(), new AtomicLong());
    }

    /** A worker of string records over {@code handler} and {@code store} whose dead letters go nowhere. */
    static KeyParallelWorker<String, String> worker(
            ConsumerSettings settings,
            TransactionalRecordHandler<Object, String, String> handler,
            RecordTransactions<Object> store) {
        return worker(settings, handler, (r, reason, d) -> {}, store);
    }

    /** A commit group of the records of {@code lanes} (up to 10 each), taken in this order from their partitions. */
    static List<ParallelPartition.Taken> take(ParallelPartition.Lane... lanes) {
        List<ParallelPartition.Taken> group = new ArrayList<>();
        for (ParallelPartition.Lane lane : lanes) {
            lane.owner.take(lane, 10, group);
        }
        return group;
    }

    /**
     * {@code group} run by {@code worker} on another thread, within {@code timeout}; its future completes with what
     * it threw, or null.
     */
    static CompletableFuture<Throwable> runAsync(
            KeyParallelWorker<String, String> worker, List<ParallelPartition.Taken> group, Duration timeout) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                worker.processGroup(group, System.nanoTime() + timeout.toNanos());
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
    }

    /** A handler's hold: waits (up to 30 seconds) until {@code goesOn} is counted down. */
    static void hold(CountDownLatch goesOn) {
        try {
            assertThat(goesOn.await(30, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
