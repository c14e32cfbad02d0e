package dev.fencing.kafka.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collection;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * How the fenced consumer runs the {@link RecordStep} over what it polls, and how it commits: serially, in units
 * of work that commit with the store ({@link SerialScheduler}), or key-parallel on a pool of workers, committing
 * each partition up to its lowest unfinished record ({@link KeyParallelRunner}). The consumer keeps the
 * lifecycle, the subscription and the partitions' ownership; it calls these from its poll thread (the
 * rebalance callbacks run there too), except the methods said to be for any thread.
 */
public interface Scheduler {
    /** How long the next poll may wait, given the configured poll timeout. */
    Duration pollTimeout(Duration configured);

    /** Runs (or hands out) one poll's records, possibly empty, and commits what the mode commits then. */
    void handle(ConsumerRecords<ByteBuffer, ByteBuffer> records);

    /** After {@link PartitionOwnership#assign}, in the assignment callback. */
    void assigned(Collection<TopicPartition> partitions);

    /**
     * In the revocation ({@code commit} true) or loss callback, before {@link PartitionOwnership#release}: when
     * this returns, nothing of these partitions runs.
     *
     * @throws dev.fencing.kafka.FencedKafkaException if that cannot be ensured (the consumer stops)
     */
    void release(Collection<TopicPartition> partitions, boolean commit);

    /** Watermarks held in memory over the owned partitions. Any thread. */
    int watermarksHeld();

    /** Records polled and not yet committable, over the owned partitions. Any thread. */
    int recordsHeld();

    /** Whether the calling thread runs handlers for this scheduler (a handler calling {@code close()}). */
    boolean isWorkerThread();

    /**
     * Whether {@code failure}, thrown by {@link #handle}, is final: already retried as long as allowed (a
     * key-parallel worker's), so the consumer must not retry it again.
     */
    default boolean isFinal(RuntimeException failure) {
        return false;
    }

    /** On shutdown, before the final offset commit; never throws. */
    void close();

    /**
     * Whether no thread of this scheduler can still run a handler (after {@link #close()}, which waits for
     * handlers only so long): a restart before then would hand their records to a second handler at once.
     */
    default boolean isTerminated() {
        return true;
    }
}
