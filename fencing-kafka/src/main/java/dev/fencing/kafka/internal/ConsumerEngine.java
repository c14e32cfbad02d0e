package dev.fencing.kafka.internal;

import dev.fencing.kafka.FencedConsumerConfig;
import dev.fencing.kafka.FencedKafkaException;
import dev.fencing.kafka.MissingTopicException;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.WatermarkStoreException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of a {@code FencedConsumer}'s loop: its Kafka clients, the partitions it owns, the mode that handles
 * records (a {@link Scheduler}), and the recovery from transient failures. A restart after a failure makes a new
 * one; the consumer keeps the lifecycle ({@link Lifecycle}). {@link #run()} runs on the poll thread, and
 * {@link #requireTopicsExist()} and {@link #closeUnstarted()} only before it; the rest from any thread.
 */
public final class ConsumerEngine<K, V> {
    // the consumer's own logger: what a run logs is the consumer's, and users set its level by that name
    private static final Logger LOG = LoggerFactory.getLogger("dev.fencing.kafka.FencedConsumer");

    /** How long a topic missing at start is looked for again before the consumer fails naming it. */
    static final Duration TOPIC_METADATA_GRACE = Duration.ofSeconds(3);

    private static final Duration TOPIC_METADATA_RETRY = Duration.ofMillis(100);

    /**
     * What every run of one consumer shares: its settings, store, handler and deserializers, and the counters of
     * attempts run again, which outlive a restart.
     *
     * @param store null: watermarks private to this consumer, offsets in Kafka
     * @param appliedOffsets the store's loads with applied offsets, if it keeps them, else null
     * @param transactions the store's record transactions for a transactional key-parallel handler, else null
     * @param retrying the poll thread and the key-parallel workers waiting to run again what a transient failure
     *     rolled back
     */
    public record Setup<K, V>(
            ConsumerSettings settings,
            WatermarkStore<Object> store,
            AppliedOffsetStore appliedOffsets,
            RecordTransactions<Object> transactions,
            TransactionalRecordHandler<Object, K, V> handler,
            boolean transactional,
            Deserializer<K> keyDeserializer,
            Deserializer<V> valueDeserializer,
            ConsumerMeters meters,
            AtomicInteger retrying,
            AtomicLong retries) {}

    /** The consumer's side of a run: its state, which the run reads and reports its end to. */
    public interface Lifecycle {
        /** Whether the consumer is still running (not closed). Any thread. */
        boolean running();

        /** Waits {@code nanos}, or until the consumer closes; returns whether it is still running. */
        boolean backOff(long nanos);

        /** The loop failed with this and now shuts down (which can take the close timeout several times). */
        void failing(Throwable failure);

        /**
         * The loop has shut down, after {@code failure} (null: it was closed); returns whether the consumer was
         * closed meanwhile, in which case the run closes the deserializers too.
         */
        boolean stopped(Throwable failure);
    }

    private final Setup<K, V> setup;
    private final Lifecycle lifecycle;
    private final ConsumerSettings settings;
    private final String groupId;
    private final String clientId;
    private final List<String> topics;
    private final WatermarkStore<Object> store;
    private final Duration closeTimeout;
    private final AtomicInteger retrying;
    private final AtomicLong retries;
    private volatile boolean failed; // the dead letters still pending belong to a unit not committed
    private final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
    private final DeadLetterWriter deadLetters;
    private final OffsetCommitter committer;
    private final TopicIds topicIds; // opened at the first assignment with a store
    private final PartitionOwnership ownership;
    private final Scheduler scheduler; // serial or key-parallel
    private final CountDownLatch stopped = new CountDownLatch(1);
    // Owned by the poll thread.
    // What a rebalance callback threw: Kafka rethrows it from poll() wrapped in its own generic error.
    private FencedKafkaException rebalanceFailure;
    private boolean recovering; // a rolled-back attempt waits to be run again: counted in retrying
    // while recovering: how far each owned partition had been read when an attempt failed
    private final Map<TopicPartition, Long> failedAt = new HashMap<>();

    public ConsumerEngine(Setup<K, V> setup, Lifecycle lifecycle) {
        this.setup = setup;
        this.lifecycle = lifecycle;
        this.settings = setup.settings();
        this.groupId = settings.groupId();
        this.clientId = settings.clientId();
        this.topics = settings.topics();
        this.store = setup.store();
        this.closeTimeout = settings.closeTimeout();
        this.retrying = setup.retrying();
        this.retries = setup.retries();
        Map<String, Object> consumerConfig = new HashMap<>(settings.kafka());
        consumerConfig.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // records of aborted producer transactions must never reach the handler (nor raise a watermark)
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        // where neither the store nor the group has an offset (a new group, an offset the log no longer
        // holds), Kafka's own default (latest) would skip every record already there without a trace
        consumerConfig.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // ByteBufferDeserializer hands over the fetched bytes in place: no copy before the fence check, and
        // the handler's deserializers read the same bytes (their ByteBuffer method) once
        this.consumer = new KafkaConsumer<>(consumerConfig, new ByteBufferDeserializer(), new ByteBufferDeserializer());
        this.deadLetters = new DeadLetterWriter(
                groupId,
                clientId,
                settings.deadLetterTopic(),
                settings.deadLetterTimeout(),
                settings.kafka(),
                settings.deadLetterProducer(),
                // key-parallel workers await each dead letter at once: a linger would only delay them
                settings.maxConcurrency() > 1 ? Duration.ZERO : DeadLetterWriter.BATCHED_LINGER);
        this.committer = new OffsetCommitter(consumer, clientId, store == null);
        this.topicIds = new TopicIds(settings.kafka(), clientId);
        this.ownership = new PartitionOwnership(groupId, store, consumer, committer, topicIds::describe);
        this.scheduler = settings.maxConcurrency() > 1
                ? keyParallel()
                : new SerialScheduler<>(
                        new UnitOfWork<>(
                                settings,
                                store,
                                setup.appliedOffsets(),
                                new RecordStep<>(
                                        settings,
                                        setup.handler(),
                                        setup.keyDeserializer(),
                                        setup.valueDeserializer(),
                                        deadLetters::send), // awaited before the unit's save
                                setup.transactional(),
                                consumer,
                                this::poll,
                                lifecycle::running,
                                ownership,
                                committer,
                                deadLetters,
                                setup.meters()),
                        ownership);
    }

    private Scheduler keyParallel() {
        RecordStep<K, V> step = new RecordStep<>(
                settings,
                setup.handler(),
                setup.keyDeserializer(),
                setup.valueDeserializer(),
                deadLetters::sendAndAwait); // acknowledged before the record counts as finished
        return new KeyParallelRunner<>(
                settings,
                store,
                setup.transactional(),
                new KeyParallelWorker<>(settings, step, setup.transactions(), retrying, retries),
                consumer,
                ownership,
                committer,
                setup.meters());
    }

    /** Subscribes and polls until the consumer closes or a failure stops the run. Poll thread. */
    public void run() {
        Throwable failure = null;
        try {
            deadLetters.open();
            requireTopicsExist();
            deadLetters.fetchMetadata(topics);
            consumer.subscribe(topics, new Rebalance());
            RetryPolicy.Attempts attempts = settings.retry().attempts();
            long progress = ownership.progress();
            while (lifecycle.running()) {
                try {
                    scheduler.handle(poll(scheduler.pollTimeout(settings.pollTimeout())));
                } catch (RuntimeException e) {
                    if (!lifecycle.running()
                            || scheduler.isFinal(e)
                            || (store == null && settings.maxConcurrency() > 1)) {
                        throw e;
                    }
                    recover(e, attempts);
                    progress = ownership.progress();
                    continue;
                }
                if (recovering && (ownership.progress() != progress || (scheduler.recordsHeld() == 0 && caughtUp()))) {
                    // what was rolled back has run again and committed, or a poll went through with nothing
                    // left to commit and nothing left to read again (an idle topic after a failed load): a
                    // new failure starts a new run. Not a poll that merely left nothing held (an empty one
                    // after the rewind, any serial one): a failure that keeps coming back would never use up
                    // fencing.retry.max.ms
                    recovering = false;
                    failedAt.clear();
                    retrying.decrementAndGet();
                    attempts.reset();
                    LOG.info("fenced consumer {} of group {} recovered", clientId, groupId);
                }
            }
        } catch (WakeupException e) {
            if (lifecycle.running()) {
                failure = e;
                fail(e);
                throw e;
            }
        } catch (RuntimeException | Error e) {
            failure = e;
            fail(e);
            throw e;
        } finally {
            if (recovering) {
                recovering = false;
                retrying.decrementAndGet();
            }
            shutDown();
            if (lifecycle.stopped(failure)) {
                closeDeserializers();
            }
            stopped.countDown();
        }
    }

    /**
     * After a transient failure on the poll thread: the serial unit was rolled back, the key-parallel
     * records running finish and none starts; every owned partition is dropped from memory (its watermarks
     * too) and, after the back-off, taken again from the store, where the consumer reads on. Throws the
     * failure if it is not retried, or once {@value FencedConsumerConfig#RETRY_MAX_MS_CONFIG} has passed.
     */
    private void recover(RuntimeException first, RetryPolicy.Attempts attempts) {
        RuntimeException failure = first;
        long wait = attempts.next(failure);
        if (wait < 0) {
            throw failure;
        }
        if (!recovering) {
            recovering = true;
            retrying.incrementAndGet();
        }
        Set<TopicPartition> owned = consumer.assignment();
        for (TopicPartition partition : owned) {
            long position = position(partition);
            if (position >= 0) {
                failedAt.merge(partition, position, Math::max);
            }
        }
        Map<TopicPartition, Long> rewind = ownership.rewindPoints();
        scheduler.release(owned, false);
        ownership.release(owned, false);
        while (true) {
            retries.incrementAndGet();
            LOG.warn(
                    "fenced consumer {} of group {}: {} (attempt {}); its partitions {} are read again from the"
                            + " store in {} ms",
                    clientId,
                    groupId,
                    failure.toString(),
                    attempts.failures(),
                    owned,
                    wait / 1_000_000);
            if (!lifecycle.backOff(wait)) {
                return; // closed meanwhile
            }
            try {
                ownership.assign(owned);
                scheduler.assigned(owned);
                ownership.rewind(owned, rewind);
                consumer.resume(consumer.paused());
                return;
            } catch (RuntimeException e) {
                ownership.release(owned, false);
                if (!lifecycle.running()) {
                    return;
                }
                failure = e;
                wait = attempts.next(failure);
                if (wait < 0) {
                    throw failure;
                }
            }
        }
    }

    /**
     * Whether every owned partition has been read again at least as far as when an attempt failed: nothing
     * rolled back is left to run again.
     */
    private boolean caughtUp() {
        for (Map.Entry<TopicPartition, Long> failed : failedAt.entrySet()) {
            if (consumer.assignment().contains(failed.getKey()) && position(failed.getKey()) < failed.getValue()) {
                return false;
            }
        }
        return true;
    }

    /** The partition's fetch position, or -1 if it has none now (nothing of it read since it was taken). */
    private long position(TopicPartition partition) {
        try {
            return consumer.position(partition, Duration.ZERO);
        } catch (WakeupException | InterruptException e) {
            throw e;
        } catch (KafkaException e) {
            return -1;
        }
    }

    /**
     * Releases everything, each step bounded by {@code closeTimeout} and none of them able to stop the
     * others or to replace the loop's own failure: it never throws. The deserializers stay open until the
     * consumer is closed (a restart uses them again).
     */
    public void shutDown() {
        try {
            scheduler.close();
            committer.commitFinal(closeTimeout);
            quietly("the Kafka consumer", () -> consumer.close(CloseOptions.timeout(closeTimeout)));
        } catch (RuntimeException e) {
            LOG.warn("closing Kafka consumer {} failed: {}", clientId, e.toString());
        } finally {
            // after a failure the dead letters still pending belong to a unit that was not committed: they are
            // written again after a restart, and waiting for them (a deleted topic's, a broker's that is gone)
            // would only hold the close for its whole timeout
            Duration deadLetterClose = failed ? Duration.ZERO : closeTimeout;
            quietly("the dead-letter producer", () -> deadLetters.close(deadLetterClose));
            quietly("the topic ids' admin client", () -> topicIds.close(closeTimeout));
            ownership.clear();
            LOG.info("fenced consumer {} of group {} stopped", clientId, groupId);
        }
    }

    /** {@code consumer.poll}, except that a failure of our rebalance callback is thrown as itself. */
    private ConsumerRecords<ByteBuffer, ByteBuffer> poll(Duration timeout) {
        ConsumerRecords<ByteBuffer, ByteBuffer> records;
        try {
            records = consumer.poll(timeout);
        } catch (KafkaException e) {
            FencedKafkaException failure = rebalanceFailure;
            if (failure != null) {
                rebalanceFailure = null;
                throw failure;
            }
            throw e;
        }
        ownership.polled(records);
        return records;
    }

    /**
     * Fails at start when a subscribed topic or a dead-letter topic is missing: otherwise the first refused
     * record would block its dead-letter write for {@code max.block.ms} and then stop the consumer. A topic
     * made just before may not yet be in the metadata of the broker that answers (Kafka's {@code
     * createTopics} returns once the controller made it), so a missing topic is looked for again for up to
     * {@link #TOPIC_METADATA_GRACE} before the consumer fails naming it.
     *
     * @throws InterruptException if interrupted while it looks again, with
     *     the thread's interrupt flag set
     */
    public void requireTopicsExist() {
        long deadline = System.nanoTime() + TOPIC_METADATA_GRACE.toNanos();
        Map<String, String> missing = missingTopics();
        while (!missing.isEmpty() && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(TOPIC_METADATA_RETRY.toMillis());
            } catch (InterruptedException e) {
                throw new InterruptException(e);
            }
            missing = missingTopics();
        }
        if (!missing.isEmpty()) {
            throw new MissingTopicException(missing, deadLetters.bootstrapServers());
        }
    }

    private Map<String, String> missingTopics() {
        Set<String> existing = consumer.listTopics().keySet();
        Map<String, String> missing = new LinkedHashMap<>();
        for (String topic : topics) {
            if (!existing.contains(topic)) {
                missing.put(topic, "it is subscribed by group " + groupId);
            }
            String deadLetterOf = deadLetters.topicFor(topic);
            if (!existing.contains(deadLetterOf)) {
                missing.putIfAbsent(deadLetterOf, "it is the dead-letter topic of " + topic + " for group " + groupId);
            }
        }
        return missing;
    }

    /** Ends a run that never started: shuts it down and lets {@link #awaitStopped} return at once. */
    public void closeUnstarted() {
        shutDown();
        closeDeserializers();
        stopped.countDown();
    }

    /** Wakes the poll thread from a poll, so that it sees the consumer closed. Any thread. */
    public void wakeup() {
        consumer.wakeup();
    }

    /** Waits up to {@code timeout} for the run to end; returns whether it did. */
    public boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Closes the handler's deserializers, which outlive a run (a restart uses them again). */
    public void closeDeserializers() {
        quietly("the key deserializer", setup.keyDeserializer()::close);
        quietly("the value deserializer", setup.valueDeserializer()::close);
    }

    /** Whether the calling thread is one of this run's key-parallel workers (running a handler). */
    public boolean isWorkerThread() {
        return scheduler.isWorkerThread();
    }

    /** Whether no handler of this run runs any more. */
    public boolean isTerminated() {
        return scheduler.isTerminated();
    }

    /** Watermarks held in memory now, over the owned partitions. */
    public int watermarksHeld() {
        return scheduler.watermarksHeld();
    }

    /** Key-parallel records polled whose offsets are not committable yet, as of the last poll. */
    public int recordsHeld() {
        return scheduler.recordsHeld();
    }

    /** The partitions this run owns now (as of its last rebalance). */
    public Set<TopicPartition> assignment() {
        return ownership.assignment();
    }

    private void fail(Throwable failure) {
        failed = true;
        lifecycle.failing(failure);
    }

    private void quietly(String what, Runnable close) {
        try {
            close.run();
        } catch (RuntimeException e) {
            LOG.warn("fenced consumer {} of group {}: closing {} failed: {}", clientId, groupId, what, e.toString());
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            try {
                release(partitions, true);
            } finally {
                ownership.release(partitions, true);
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            try {
                release(partitions, false);
            } finally {
                ownership.release(partitions, false);
            }
        }

        /** Nothing of these partitions runs once this returns, or the consumer stops. */
        private void release(Collection<TopicPartition> partitions, boolean commit) {
            try {
                scheduler.release(partitions, commit);
            } catch (FencedKafkaException e) {
                rebalanceFailure = e;
                throw e;
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            try {
                ownership.assign(partitions);
                scheduler.assigned(partitions);
            } catch (FencedKafkaException e) {
                rebalanceFailure = e;
                throw e;
            } catch (KafkaException e) {
                throw e; // wakeup, or Kafka's own failure: poll() throws it as it is
            } catch (RuntimeException e) {
                rebalanceFailure = new WatermarkStoreException(
                        "could not load the watermarks of " + partitions + " for group " + groupId + ": " + e, e);
                throw rebalanceFailure;
            }
        }
    }
}
