package dev.fencing.kafka;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.ConsumerMeters;
import dev.fencing.kafka.internal.ConsumerSettings;
import dev.fencing.kafka.internal.DeadLetterWriter;
import dev.fencing.kafka.internal.FencingSetting;
import dev.fencing.kafka.internal.FencingSettings;
import dev.fencing.kafka.internal.OffsetCommitter;
import dev.fencing.kafka.internal.PartitionOwnership;
import dev.fencing.kafka.internal.UnitOfWork;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka poll loop that hands a record to your handler only if its fence token is not older than the
 * newest token already accepted for its key, and never loses the ones it refuses.
 *
 * <p>The fencing contract, for a resource guarded by a lock whose grants carry increasing tokens:
 *
 * <pre>
 *   holder A (token 7)  --- publishes "set 10" --- GC pause ......................... publishes "set 11" (late!)
 *   holder B (token 8)                              acquires --- publishes "set 20"
 *   consumer                "set 10" (7) applied     "set 20" (8) applied; watermark 8   "set 11" (7): 7 &lt; 8, refused
 * </pre>
 *
 * Records of one resource share a key, so they sit in one partition and arrive in the order written; the
 * consumer keeps per key the highest accepted token (its watermark) and refuses any record below it.
 *
 * <pre>{@code
 * // the consumer runs until close(): keep it for the life of the service, not in a try-with-resources
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
 *         .properties(Map.of(
 *                 ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "kafka:9092",
 *                 ConsumerConfig.GROUP_ID_CONFIG, "inventory-applier",
 *                 ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
 *         .topics("inventory") // "inventory" and "inventory.dlt" must exist
 *         .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) ->
 *                 handle.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
 *         .build();
 * CompletableFuture<Void> stopped = consumer.start(); // or consumer.run() on a thread of yours
 * // on shutdown: consumer.close();
 * }
 * }</pre>
 *
 * <p>What it guarantees:
 *
 * <ul>
 *   <li>Order: one poll thread handles records one at a time, in offset order per partition, so in order
 *       per key. Equal tokens are accepted ({@link FencePolicy#MONOTONIC}, the default), so a holder may
 *       publish several records under one grant; {@link FencePolicy#STRICT} ({@value
 *       FencedConsumerConfig#POLICY_CONFIG}{@code =strict}) refuses them.
 *   <li>Nothing silently discarded: a record without a key, without a {@value FenceTokenHeader#NAME} header,
 *       with an unreadable one, or that the deserializers refuse, goes to the dead-letter topic, with the
 *       {@link DeadLetterHeaders} saying why and where it came from. Stale records go there too, unless
 *       {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}{@code =drop}, which counts and logs them.
 *   <li>Offsets: committed manually, only up to records whose handling finished (dead-lettered and dropped
 *       records count as finished once the dead-letter write is acknowledged). {@code enable.auto.commit}
 *       is refused.
 *   <li>Watermarks: kept in a {@link WatermarkStore}, which the builder requires: {@link
 *       PostgresWatermarkStore} (durable, shared by the group), {@link InMemoryWatermarkStore} (one JVM), or the
 *       explicit opt-in {@link Builder#heapOnlyWatermarksLostOnRestart()}, which loses them on every restart.
 *       With {@link PostgresWatermarkStore} and a {@link TransactionalRecordHandler} each unit (handler
 *       effects, watermarks, offsets) is one transaction: a crash and restart neither applies a record twice
 *       nor accepts a stale one. Each unit first claims its partitions in the store (see {@link
 *       WatermarkStore#claim}), so a member expelled from the group waits or fails before its handler runs on
 *       records of a partition another member committed. On assignment the consumer stops with {@link
 *       StoreBehindKafkaException} if the group's committed offset in Kafka is ahead of the store's.
 *   <li>Memory: the consumer holds watermarks only for the partitions it owns and drops them when a
 *       partition is revoked or lost. A lazily loading store ({@link WatermarkStore#loadsLazily()}, the
 *       PostgreSQL one) costs one offset read at assignment, and each key's watermark is loaded, in one query
 *       per poll, when its records arrive. Per partition at most {@value
 *       FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG} watermarks are held (about 90 bytes each for
 *       10-byte keys); above that they are dropped at the end of a unit and, with a store, loaded again as
 *       their keys come back (heap-only: forgotten). The {@link InMemoryWatermarkStore} itself keeps every key
 *       it was given.
 *   <li>Units of work: by default each poll's records are one unit (one store commit, one offset commit).
 *       {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG} lets a unit span several polls, which
 *       amortizes the store's commit (each key's watermark is written once per unit); a rebalance during a
 *       unit rolls the unit back and its records are read again.
 * </ul>
 *
 * <p>Not a {@code ConsumerInterceptor}: Kafka logs and swallows an interceptor's exception and passes the
 * records on, which would fail open.
 *
 * <p>Deserialization: the consumer fetches with Kafka's {@code ByteBufferDeserializer}, so the fence check reads
 * each key where the fetch put it, and the handler's deserializers get the same bytes through their {@code
 * ByteBuffer} method; deserializers that read a {@code byte[]} get a copy, as with a plain {@code
 * KafkaConsumer}. A deserializer that returns the buffer itself (a {@code ByteBufferDeserializer} of your own)
 * hands the handler a slice of the fetch response: copy what you keep, or the whole response stays in memory.
 *
 * <p>Failure: a handler exception or {@code Error} (the unit is rolled back either way), a dead-letter write
 * that fails or exceeds {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}, a store that cannot
 * load or save, a missing topic or dead-letter topic at start, or a store behind Kafka stops the loop; {@link
 * #run()} throws it ({@link RecordHandlingException}, {@link DeadLetterException}, {@link
 * WatermarkStoreException}, {@link MissingTopicException}, {@link StoreBehindKafkaException}) and {@link
 * #start()}'s future completes with it. Records are read {@code read_committed} only. With the in-memory store
 * or a plain handler, delivery is at least once: a crash between the handler and the offset commit replays
 * records, and a replayed record with the watermark's token is accepted again.
 *
 * <p>Dead letters are written at least once: a batch that is rolled back after its dead-letter writes
 * writes them again when it is read again.
 *
 * <p>Metrics, with a {@link Builder#meterRegistry} (none by default; Micrometer, tags {@code group}, {@code
 * topic}): counters {@code fencing.kafka.records.accepted},
 * {@code fencing.kafka.records.dropped} (stale, count-and-drop policy), {@code
 * fencing.kafka.records.dead.lettered} (with tag {@code reason}); gauge {@code fencing.kafka.watermarks.held}.
 *
 * <p>Thread-safety: {@link #run()} or {@link #start()} once; {@link #close()} and {@link #heldWatermarks()}
 * from any thread. {@code close()} is safe to call twice.
 */
public final class FencedConsumer<K, V> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencedConsumer.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private enum State {
        NEW,
        RUNNING,
        CLOSED
    }

    private final String groupId;
    private final String clientId;
    private final List<String> topics;
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final WatermarkStore<Object> store; // null: watermarks private to this consumer, offsets in Kafka
    private final FencePolicy policy;
    private final StaleRecordPolicy stalePolicy;
    private final Duration pollTimeout;
    private final Duration closeTimeout;
    private final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
    private final DeadLetterWriter deadLetters;
    private final ConsumerMeters meters;

    private final OffsetCommitter committer;
    private final PartitionOwnership ownership;
    private final UnitOfWork<K, V> unit;
    // Owned by the poll thread.
    // What a rebalance callback threw: Kafka rethrows it from poll() wrapped in its own generic error.
    private FencedKafkaException rebalanceFailure;

    private final Object lock = new Object();
    private volatile State state = State.NEW;
    private Thread pollThread;
    private final CountDownLatch stopped = new CountDownLatch(1);

    private FencedConsumer(Builder<K, V> builder, ConsumerSettings settings) {
        this.groupId = settings.groupId();
        this.clientId = settings.clientId();
        this.topics = settings.topics();
        this.keyDeserializer = builder.keyDeserializer;
        this.valueDeserializer = builder.valueDeserializer;
        this.store = builder.store;
        this.policy = settings.policy();
        this.stalePolicy = settings.staleRecords();
        this.pollTimeout = settings.pollTimeout();
        this.closeTimeout = settings.closeTimeout();

        Map<String, Object> consumerConfig = new HashMap<>(settings.kafka());
        consumerConfig.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // records of aborted producer transactions must never reach the handler (nor raise a watermark)
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        // ByteBufferDeserializer hands over the fetched bytes in place: no copy before the fence check, and the
        // handler's deserializers read the same bytes (their ByteBuffer method) once
        this.consumer = new KafkaConsumer<>(consumerConfig, new ByteBufferDeserializer(), new ByteBufferDeserializer());
        this.deadLetters = new DeadLetterWriter(
                groupId,
                clientId,
                settings.deadLetterTopic(),
                settings.deadLetterTimeout(),
                settings.kafka(),
                settings.deadLetterProducer());
        this.committer = new OffsetCommitter(consumer, clientId, store == null);
        this.ownership = new PartitionOwnership(groupId, store, consumer, committer);
        this.meters = new ConsumerMeters(builder.meterRegistry, groupId, clientId, ownership::held);
        this.unit = new UnitOfWork<>(
                settings,
                store,
                builder.handler,
                builder.transactional,
                keyDeserializer,
                valueDeserializer,
                consumer,
                this::poll,
                () -> state == State.RUNNING,
                ownership,
                committer,
                deadLetters,
                meters);
    }

    /** A builder for a consumer whose handler sees keys and values made by these deserializers. */
    public static <K, V> Builder<K, V> builder(Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        return new Builder<>(keyDeserializer, valueDeserializer);
    }

    /**
     * Subscribes and polls on the calling thread until {@link #close()} is called or a failure stops it.
     *
     * @throws IllegalStateException if already started or closed
     * @throws RecordHandlingException if the handler threw
     * @throws DeadLetterException if a refused record could not be written to the dead-letter topic
     * @throws WatermarkStoreException if the store could not load or save
     */
    public void run() {
        synchronized (lock) {
            if (state != State.NEW) {
                throw new IllegalStateException("consumer " + clientId + " of group " + groupId + " is " + state);
            }
            state = State.RUNNING;
            pollThread = Thread.currentThread();
        }
        LOG.info(
                "fenced consumer {} of group {} starting on {} (store {}, policy {}, stale records {})",
                clientId,
                groupId,
                topics,
                store == null ? "none: this consumer's heap" : store.getClass().getSimpleName(),
                policy,
                stalePolicy.configValue());
        try {
            deadLetters.open();
            requireTopicsExist();
            consumer.subscribe(topics, new Rebalance());
            while (state == State.RUNNING) {
                ConsumerRecords<ByteBuffer, ByteBuffer> records = poll(pollTimeout);
                if (!records.isEmpty()) {
                    unit.run(records);
                }
            }
        } catch (WakeupException e) {
            if (state == State.RUNNING) {
                throw e;
            }
        } finally {
            shutDown();
        }
    }

    /**
     * Runs {@link #run()} on a new thread named after the client id.
     *
     * @return completes when the loop ends: normally after {@link #close()}, exceptionally with the failure
     *     that stopped it
     */
    public CompletableFuture<Void> start() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread thread = new Thread(
                () -> {
                    try {
                        run();
                        done.complete(null);
                    } catch (Throwable e) {
                        if (state == State.CLOSED && e instanceof IllegalStateException && pollThread == null) {
                            done.complete(null); // closed before the thread got to run
                        } else {
                            done.completeExceptionally(e);
                        }
                    }
                },
                clientId);
        thread.setDaemon(true);
        thread.start();
        return done;
    }

    /** Number of watermarks held in memory now: the keys of the partitions this consumer owns. */
    public int heldWatermarks() {
        return ownership.held();
    }

    /** The partitions this consumer owns now (as of its last rebalance); empty before it joins. */
    public Set<TopicPartition> assignment() {
        return ownership.assignment();
    }

    /** The client id, also the name of the thread {@link #start()} makes. */
    public String clientId() {
        return clientId;
    }

    /**
     * Stops polling after the current record's batch is committed, leaves the group and waits up to
     * {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG} for that. Safe to call twice and from any thread,
     * including from the handler.
     */
    @Override
    public void close() {
        State previous;
        synchronized (lock) {
            previous = state;
            state = State.CLOSED;
        }
        if (previous == State.NEW) {
            shutDown();
            return;
        }
        if (Thread.currentThread() == pollThread) {
            return;
        }
        consumer.wakeup();
        try {
            if (!stopped.await(closeTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("fenced consumer {} of group {} did not stop within {}", clientId, groupId, closeTimeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Releases everything, each step bounded by {@code closeTimeout} and none of them able to stop the others
     * or to replace the loop's own failure: it never throws.
     */
    private void shutDown() {
        try {
            committer.commitFinal(closeTimeout);
            quietly("the Kafka consumer", () -> consumer.close(CloseOptions.timeout(closeTimeout)));
        } catch (RuntimeException e) {
            LOG.warn("closing Kafka consumer {} failed: {}", clientId, e.toString());
        } finally {
            quietly("the dead-letter producer", () -> deadLetters.close(closeTimeout));
            quietly("the key deserializer", keyDeserializer::close);
            quietly("the value deserializer", valueDeserializer::close);
            ownership.clear();
            stopped.countDown();
            LOG.info("fenced consumer {} of group {} stopped", clientId, groupId);
        }
    }

    private void quietly(String what, Runnable close) {
        try {
            close.run();
        } catch (RuntimeException e) {
            LOG.warn("fenced consumer {} of group {}: closing {} failed: {}", clientId, groupId, what, e.toString());
        }
    }

    /** {@code consumer.poll}, except that a failure of our rebalance callback is thrown as itself. */
    private ConsumerRecords<ByteBuffer, ByteBuffer> poll(Duration timeout) {
        try {
            return consumer.poll(timeout);
        } catch (KafkaException e) {
            FencedKafkaException failure = rebalanceFailure;
            if (failure != null) {
                rebalanceFailure = null;
                throw failure;
            }
            throw e;
        }
    }

    /**
     * Fails at once when a subscribed topic or a dead-letter topic is missing: otherwise the first refused
     * record would block its dead-letter write for {@code max.block.ms} and then stop the consumer.
     */
    private void requireTopicsExist() {
        Set<String> existing = consumer.listTopics().keySet();
        for (String topic : topics) {
            if (!existing.contains(topic)) {
                throw new MissingTopicException(
                        topic, "it is subscribed by group " + groupId, deadLetters.bootstrapServers());
            }
            String deadLetterOf = deadLetters.topicFor(topic);
            if (!existing.contains(deadLetterOf)) {
                throw new MissingTopicException(
                        deadLetterOf,
                        "it is the dead-letter topic of " + topic + " for group " + groupId,
                        deadLetters.bootstrapServers());
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static WatermarkStore<Object> castStore(WatermarkStore<?> store) {
        // Safe: the consumer only passes the store's own unit of work back to the matching handler.
        return (WatermarkStore<Object>) store;
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            unit.abortIfOpen();
            ownership.release(partitions, true);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            unit.abortIfOpen();
            ownership.release(partitions, false);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            unit.abortIfOpen();
            try {
                ownership.assign(partitions);
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

    /**
     * Settings of a {@link FencedConsumer}; every setter checks its value and fails at once. Required:
     * {@code bootstrap.servers} and {@code group.id} among the properties, at least one topic, a handler,
     * and a watermark store (or the explicit {@link #heapOnlyWatermarksLostOnRestart()}).
     */
    public static final class Builder<K, V> {
        private final Deserializer<K> keyDeserializer;
        private final Deserializer<V> valueDeserializer;
        private final Map<String, Object> kafka = new HashMap<>();
        private final List<String> topics = new ArrayList<>();
        private final Map<String, Object> deadLetterProducer = new HashMap<>();
        private WatermarkStore<Object> store;
        private TransactionalRecordHandler<Object, K, V> handler;
        private boolean transactional;
        private boolean heapOnly;
        private final Map<FencingSetting<?>, Object> fencing = new HashMap<>(); // given fencing.* values
        private String policyKey; // which of fencing.policy / fencing.strict set it, to refuse both
        private MeterRegistry meterRegistry; // null: no meters

        private Builder(Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
            this.keyDeserializer = Objects.requireNonNull(keyDeserializer, "keyDeserializer");
            this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
        }

        /**
         * Kafka consumer properties plus any {@link FencedConsumerConfig} {@code fencing.*} keys.
         *
         * @throws IllegalArgumentException for {@code enable.auto.commit=true}, a deserializer class (give
         *     deserializer instances to {@link FencedConsumer#builder}), an unknown {@code fencing.*} key or a
         *     bad value
         */
        public Builder<K, V> properties(Map<String, ?> properties) {
            Objects.requireNonNull(properties, "properties");
            properties.forEach(this::property);
            return this;
        }

        /** One property, as in {@link #properties(Map)}. */
        public Builder<K, V> property(String key, Object value) {
            Objects.requireNonNull(key, "property key");
            Objects.requireNonNull(value, () -> "value of " + key);
            if (key.startsWith(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX)) {
                String producerKey = key.substring(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX.length());
                if (producerKey.isBlank()
                        || producerKey.equals(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG)
                        || producerKey.equals(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG)) {
                    throw new IllegalArgumentException(key + " is refused: the dead-letter producer writes raw bytes");
                }
                String text = String.valueOf(value).trim().toLowerCase(Locale.ROOT);
                if (producerKey.equals(ProducerConfig.ACKS_CONFIG) && !(text.equals("all") || text.equals("-1"))) {
                    throw new IllegalArgumentException(key + "=" + value + " is refused: a dead letter counts as"
                            + " handled once its write is acknowledged, so it must be acknowledged by every in-sync"
                            + " replica (acks=all), or a broker failure loses it");
                }
                if (producerKey.equals(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG) && !FencingSettings.bool(key, value)) {
                    throw new IllegalArgumentException(key + "=" + value + " is refused: without idempotence a"
                            + " retried dead-letter write can be reordered or duplicated");
                }
                deadLetterProducer.put(producerKey, value);
                return this;
            }
            if (key.startsWith(FencedConsumerConfig.PREFIX)) {
                FencingSetting<?> setting = FencingSettings.byKey(key);
                if (setting == null) {
                    throw new IllegalArgumentException("unknown setting " + key + "; known: " + FencingSettings.keys());
                }
                if (setting == FencingSettings.STRICT) {
                    requireOnePolicyKey(key);
                    fencing.put(
                            FencingSettings.POLICY,
                            FencingSettings.STRICT.fromProperty(value) ? FencePolicy.STRICT : FencePolicy.MONOTONIC);
                } else {
                    if (setting == FencingSettings.POLICY) {
                        requireOnePolicyKey(key);
                    }
                    fencing.put(setting, setting.fromProperty(value));
                }
                return this;
            }
            switch (key) {
                case ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG -> {
                    if (FencingSettings.bool(key, value)) {
                        throw new IllegalArgumentException(key + "=true is refused: the fenced consumer commits"
                                + " offsets itself, only for records whose handling finished");
                    }
                }
                case ConsumerConfig.ISOLATION_LEVEL_CONFIG -> {
                    String level = String.valueOf(value).trim().toLowerCase(Locale.ROOT);
                    if (!level.equals("read_committed")) {
                        throw new IllegalArgumentException(key + "=" + value + " is refused: the fenced consumer reads"
                                + " read_committed only, or records of aborted producer transactions would be"
                                + " applied (and raise watermarks) although their producer took them back");
                    }
                    kafka.put(key, level);
                }
                case ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG ->
                    throw new IllegalArgumentException(key
                            + " is refused: pass deserializer instances to FencedConsumer.builder(...); the consumer"
                            + " reads raw bytes so it can fence and dead-letter records it cannot deserialize");
                case ConsumerConfig.GROUP_ID_CONFIG, ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG -> {
                    if (!(value instanceof String text) || text.isBlank()) {
                        throw new IllegalArgumentException(key + " must be a non-blank string, got '" + value + "'");
                    }
                    kafka.put(key, text.trim());
                }
                default -> kafka.put(key, value);
            }
            return this;
        }

        /** Topics to subscribe to. */
        public Builder<K, V> topics(String... topics) {
            return topics(List.of(topics));
        }

        /** Topics to subscribe to. */
        public Builder<K, V> topics(Collection<String> topics) {
            Objects.requireNonNull(topics, "topics");
            for (String topic : topics) {
                if (topic == null || topic.isBlank()) {
                    throw new IllegalArgumentException("topic names must be non-blank, got " + topics);
                }
                this.topics.add(topic);
            }
            return this;
        }

        /** The handler for accepted records; its effects are outside the store's transaction. */
        public Builder<K, V> handler(RecordHandler<K, V> handler) {
            Objects.requireNonNull(handler, "handler");
            requireNoHandler();
            this.handler = (tx, record, token) -> handler.handle(record, token);
            this.transactional = false;
            return this;
        }

        /**
         * The handler and the store whose transaction it joins: its effects, the watermarks and the offsets
         * of a batch commit together.
         */
        public <T> Builder<K, V> transactionalHandler(
                WatermarkStore<T> store, TransactionalRecordHandler<T, K, V> handler) {
            Objects.requireNonNull(store, "store");
            Objects.requireNonNull(handler, "handler");
            requireNoHandler();
            if (this.store != null || heapOnly) {
                throw new IllegalStateException(
                        heapOnly
                                ? "heapOnlyWatermarksLostOnRestart() is set; transactionalHandler needs a store of its own"
                                : "a watermark store is already set; transactionalHandler sets its own");
            }
            this.store = castStore(store);
            @SuppressWarnings("unchecked")
            TransactionalRecordHandler<Object, K, V> cast = (TransactionalRecordHandler<Object, K, V>) handler;
            this.handler = cast;
            this.transactional = true;
            return this;
        }

        /**
         * Where watermarks and offsets are kept, for a {@link #handler}. One of this, {@link
         * #transactionalHandler} or {@link #heapOnlyWatermarksLostOnRestart()} is required: there is no default,
         * because a consumer that forgets its watermarks applies stale records after a restart. {@link
         * PostgresWatermarkStore} survives restarts and is shared by every member of the group; an {@link
         * InMemoryWatermarkStore} is shared by the consumers of one JVM only.
         */
        public Builder<K, V> watermarkStore(WatermarkStore<?> store) {
            Objects.requireNonNull(store, "store");
            if (transactional) {
                throw new IllegalStateException("transactionalHandler already set the store");
            }
            if (heapOnly) {
                throw new IllegalStateException("heapOnlyWatermarksLostOnRestart() is set; choose one");
            }
            this.store = castStore(store);
            return this;
        }

        /**
         * Opts out of a watermark store: this consumer keeps its watermarks in its own heap and its offsets in
         * Kafka only. <b>What this loses</b>: every watermark, when the consumer stops (a restart, a crash, a
         * deployment) and, for a partition that another member owned meanwhile, the fresher tokens that member
         * accepted. After such a loss the first record of each key is accepted whatever its token, so a stale
         * record that arrives after the restart (or was still unread in the partition) is <b>applied</b>:
         * fencing holds only against stale records that follow a fresher one this same consumer instance
         * accepted. It also keeps the watermarks of partitions it gave away (should they come back); per
         * partition at most {@value FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG}, beyond which they are
         * forgotten too. Use it for a single long-lived consumer where that is
         * acceptable, or for measurements; otherwise give a {@link #watermarkStore}.
         */
        public Builder<K, V> heapOnlyWatermarksLostOnRestart() {
            if (store != null) {
                throw new IllegalStateException("a watermark store is already set; choose one");
            }
            this.heapOnly = true;
            return this;
        }

        /** {@value FencedConsumerConfig#POLICY_CONFIG}: {@value FencedConsumerConfig#POLICY_DOC} */
        public Builder<K, V> fencePolicy(FencePolicy policy) {
            return set(FencingSettings.POLICY, policy);
        }

        private void requireOnePolicyKey(String key) {
            if (policyKey != null && !policyKey.equals(key)) {
                throw new IllegalArgumentException(key + " and " + policyKey + " both set the fence policy; keep "
                        + FencedConsumerConfig.POLICY_CONFIG);
            }
            policyKey = key;
        }

        /** {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}: {@value FencedConsumerConfig#STALE_RECORDS_DOC} */
        public Builder<K, V> staleRecords(StaleRecordPolicy policy) {
            return set(FencingSettings.STALE_RECORDS, policy);
        }

        /**
         * {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_CONFIG}: {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_DOC}
         */
        public Builder<K, V> deadLetterTopic(String topic) {
            Objects.requireNonNull(topic, "topic");
            return set(FencingSettings.DEAD_LETTER_TOPIC, topic.trim());
        }

        /** {@value FencedConsumerConfig#POLL_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#POLL_TIMEOUT_MS_DOC} */
        public Builder<K, V> pollTimeout(Duration timeout) {
            return set(FencingSettings.POLL_TIMEOUT, timeout);
        }

        /**
         * {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_DOC}
         */
        public Builder<K, V> closeTimeout(Duration timeout) {
            return set(FencingSettings.CLOSE_TIMEOUT, timeout);
        }

        /**
         * {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}: {@value
         * FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_DOC}
         */
        public Builder<K, V> deadLetterTimeout(Duration timeout) {
            return set(FencingSettings.DEAD_LETTER_TIMEOUT, timeout);
        }

        /**
         * {@value FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG}: {@value
         * FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_DOC}
         */
        public Builder<K, V> watermarkCacheMaxKeys(int maxKeys) {
            return set(FencingSettings.WATERMARK_CACHE_MAX_KEYS, maxKeys);
        }

        /**
         * {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG}: {@value
         * FencedConsumerConfig#COMMIT_MAX_RECORDS_DOC}
         */
        public Builder<K, V> commitMaxRecords(long records) {
            return set(FencingSettings.COMMIT_MAX_RECORDS, records);
        }

        /**
         * {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG}: {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_DOC}
         */
        public Builder<K, V> commitInterval(Duration interval) {
            return set(FencingSettings.COMMIT_INTERVAL, interval);
        }

        /**
         * Counts records and watermarks in this registry (the meters are listed in the {@link FencedConsumer}
         * javadoc). Without one the consumer counts nothing; it never registers in Micrometer's global registry
         * unasked.
         */
        public Builder<K, V> meterRegistry(MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * A consumer with these settings; it connects when {@link FencedConsumer#run()} or {@link
         * FencedConsumer#start()} is called.
         *
         * @throws IllegalStateException if a required setting is missing
         */
        public FencedConsumer<K, V> build() {
            for (String required : List.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ConsumerConfig.GROUP_ID_CONFIG)) {
                if (!kafka.containsKey(required)) {
                    throw new IllegalStateException(required + " is required");
                }
            }
            if (topics.isEmpty()) {
                throw new IllegalStateException("at least one topic is required");
            }
            if (handler == null) {
                throw new IllegalStateException("a handler is required");
            }
            String deadLetterTopic = get(FencingSettings.DEAD_LETTER_TOPIC);
            if (!deadLetterTopic.isEmpty() && topics.contains(deadLetterTopic)) {
                throw new IllegalStateException("dead-letter topic " + deadLetterTopic + " is also subscribed");
            }
            for (String topic : topics) {
                String defaultDeadLetters = topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX;
                if (deadLetterTopic.isEmpty() && topics.contains(defaultDeadLetters)) {
                    throw new IllegalStateException("dead-letter topic " + defaultDeadLetters + " of " + topic
                            + " is also subscribed: its stale records would be read again without their watermarks");
                }
            }
            if (store == null && !heapOnly) {
                throw new IllegalStateException("a watermark store is required: without one the consumer forgets its"
                        + " watermarks when it stops and applies stale records after a restart. Either give a durable"
                        + " store shared by every member of the group, .watermarkStore(PostgresWatermarkStore.create("
                        + "jdbi)) or .transactionalHandler(PostgresWatermarkStore.create(jdbi), handler), or opt in"
                        + " to losing them with .heapOnlyWatermarksLostOnRestart()");
            }
            String clientId = kafka.containsKey(ConsumerConfig.CLIENT_ID_CONFIG)
                    ? String.valueOf(kafka.get(ConsumerConfig.CLIENT_ID_CONFIG))
                    : "fenced-consumer-" + INSTANCES.incrementAndGet();
            ConsumerSettings settings = new ConsumerSettings(
                    (String) kafka.get(ConsumerConfig.GROUP_ID_CONFIG),
                    clientId,
                    topics,
                    kafka,
                    deadLetterProducer,
                    get(FencingSettings.POLICY),
                    get(FencingSettings.STALE_RECORDS),
                    deadLetterTopic,
                    get(FencingSettings.POLL_TIMEOUT),
                    get(FencingSettings.CLOSE_TIMEOUT),
                    get(FencingSettings.DEAD_LETTER_TIMEOUT),
                    get(FencingSettings.WATERMARK_CACHE_MAX_KEYS),
                    get(FencingSettings.COMMIT_MAX_RECORDS),
                    get(FencingSettings.COMMIT_INTERVAL));
            return new FencedConsumer<>(this, settings);
        }

        private <T> Builder<K, V> set(FencingSetting<T> setting, T value) {
            fencing.put(setting, setting.checked(value));
            return this;
        }

        private <T> T get(FencingSetting<T> setting) {
            @SuppressWarnings("unchecked") // put only by set() and property(), each with its setting's type
            T value = (T) fencing.getOrDefault(setting, setting.defaultValue());
            return value;
        }

        private void requireNoHandler() {
            if (handler != null) {
                throw new IllegalStateException("a handler is already set");
            }
        }
    }

    @Override
    public String toString() {
        return "FencedConsumer[" + clientId + ", group " + groupId + ", " + topics + "]";
    }
}
