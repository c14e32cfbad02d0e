package dev.fencing.kafka;

import dev.fencing.kafka.internal.ConsumerMeters;
import dev.fencing.kafka.internal.Keys;
import dev.fencing.kafka.internal.PartitionWatermarks;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
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
 * try (FencedConsumer<String, String> consumer = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
 *         .properties(Map.of(
 *                 ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "kafka:9092",
 *                 ConsumerConfig.GROUP_ID_CONFIG, "inventory-applier",
 *                 ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
 *         .topics("inventory")
 *         .handler((record, token) -> inventory.apply(record.key(), record.value()))
 *         .build()) {
 *     CompletableFuture<Void> stopped = consumer.start(); // or consumer.run() on a thread of yours
 *     ...
 * }
 * }</pre>
 *
 * <p>What it guarantees:
 *
 * <ul>
 *   <li>Order: one poll thread handles records one at a time, in offset order per partition, so in order
 *       per key. Equal tokens are accepted ({@value FencedConsumerConfig#STRICT_CONFIG}{@code =false}), so a
 *       holder may publish several records under one grant; strict mode refuses them.
 *   <li>Nothing silently discarded: a record without a key, without a {@value FenceTokenHeader#NAME} header,
 *       with an unreadable one, or that the deserializers refuse, goes to the dead-letter topic, with the
 *       {@link DeadLetterHeaders} saying why and where it came from. Stale records go there too, unless
 *       {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}{@code =drop}, which counts and logs them.
 *   <li>Offsets: committed manually, only up to records whose handling finished (dead-lettered and dropped
 *       records count as finished once the dead-letter write is acknowledged). {@code enable.auto.commit}
 *       is refused.
 *   <li>Watermarks: kept in a {@link WatermarkStore}; a newly assigned partition's watermarks and offset
 *       are loaded inside the rebalance callback, before any of its records is handled. With {@link
 *       PostgresWatermarkStore} and a {@link TransactionalRecordHandler} each batch (handler effects,
 *       watermarks, offsets) is one transaction: a crash and restart neither applies a record twice nor
 *       accepts a stale one. Without a store (the default) the watermarks live in this consumer's heap only
 *       and are lost with it: fine for a single long-lived consumer, not across restarts or members; see
 *       {@link Builder#watermarkStore}.
 *   <li>Memory: with a {@link WatermarkStore}, the consumer holds the watermarks of the partitions it owns
 *       now and drops them when a partition is revoked, so its memory is proportional to the distinct keys of
 *       its partitions (about 90 bytes per key of 10 bytes: 100,000 keys take about 9 MB), never to the
 *       number of records. The {@link InMemoryWatermarkStore} keeps every key it has seen (about as much again); the
 *       PostgreSQL store keeps them on disk and the consumer loads only its partitions' keys. Without a store
 *       (the default) the consumer keeps every key it has seen, once.
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
 * <p>Failure: a handler exception, a dead-letter write that fails, or a store that cannot load or save
 * stops the loop; {@link #run()} throws it ({@link RecordHandlingException}, {@link DeadLetterException},
 * {@link WatermarkStoreException}) and {@link #start()}'s future completes with it. With the in-memory store
 * or a plain handler, delivery is at least once: a crash between the handler and the offset commit replays
 * records, and a replayed record with the watermark's token is accepted again.
 *
 * <p>Dead letters are written at least once: a batch that is rolled back after its dead-letter writes
 * writes them again when it is read again.
 *
 * <p>Metrics (Micrometer, tags {@code group}, {@code topic}): counters {@code fencing.kafka.records.accepted},
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
    private final Map<TopicPartition, PartitionWatermarks> parked; // given-away partitions, when store is null
    private final TransactionalRecordHandler<Object, K, V> handler;
    private final boolean transactional;
    private final boolean strict;
    private final StaleRecordPolicy stalePolicy;
    private final String deadLetterTopic;
    private final Duration pollTimeout;
    private final Duration closeTimeout;
    private final long commitMaxRecords;
    private final Duration commitInterval;
    private final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
    private final Map<String, Object> deadLetterConfig;
    private KafkaProducer<byte[], byte[]> deadLetters;
    private final ConsumerMeters meters;

    // Owned by the poll thread; heldCount is read by other threads.
    private final Map<TopicPartition, PartitionWatermarks> watermarks = new HashMap<>();
    private final Map<TopicPartition, Long> storedOffsets = new HashMap<>();
    private final Map<TopicPartition, OffsetAndMetadata> finishedOffsets = new HashMap<>();
    private volatile int heldCount;
    private boolean unitOpen;
    private boolean unitAborted;
    private volatile Set<TopicPartition> assignment = Set.of();

    private final Object lock = new Object();
    private volatile State state = State.NEW;
    private Thread pollThread;
    private final CountDownLatch stopped = new CountDownLatch(1);

    private FencedConsumer(Builder<K, V> builder) {
        this.groupId = (String) builder.kafka.get(ConsumerConfig.GROUP_ID_CONFIG);
        this.clientId = (String) builder.kafka.computeIfAbsent(
                ConsumerConfig.CLIENT_ID_CONFIG, k -> "fenced-consumer-" + INSTANCES.incrementAndGet());
        this.topics = List.copyOf(builder.topics);
        this.keyDeserializer = builder.keyDeserializer;
        this.valueDeserializer = builder.valueDeserializer;
        this.store = builder.store;
        this.parked = builder.store == null ? new HashMap<>() : null;
        this.handler = builder.handler;
        this.transactional = builder.transactional;
        this.strict = builder.strict;
        this.stalePolicy = builder.stalePolicy;
        this.deadLetterTopic = builder.deadLetterTopic;
        this.pollTimeout = builder.pollTimeout;
        this.closeTimeout = builder.closeTimeout;
        this.commitMaxRecords = builder.commitMaxRecords;
        this.commitInterval = builder.commitInterval;

        Map<String, Object> consumerConfig = new HashMap<>(builder.kafka);
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // ByteBufferDeserializer hands over the fetched bytes in place: no copy before the fence check, and the
        // handler's deserializers read the same bytes (their ByteBuffer method) once
        this.consumer = new KafkaConsumer<>(consumerConfig, new ByteBufferDeserializer(), new ByteBufferDeserializer());
        this.deadLetterConfig = deadLetterProducerConfig(builder.kafka, builder.deadLetterProducer, clientId);
        this.meters = new ConsumerMeters(builder.meterRegistry, groupId, clientId, () -> heldCount);
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
                "fenced consumer {} of group {} starting on {} (store {}, strict {}, stale records {})",
                clientId,
                groupId,
                topics,
                store == null ? "none: this consumer's heap" : store.getClass().getSimpleName(),
                strict,
                stalePolicy.configValue());
        try {
            deadLetters = new KafkaProducer<>(deadLetterConfig, new ByteArraySerializer(), new ByteArraySerializer());
            consumer.subscribe(topics, new Rebalance());
            while (state == State.RUNNING) {
                ConsumerRecords<ByteBuffer, ByteBuffer> records = consumer.poll(pollTimeout);
                if (!records.isEmpty()) {
                    handleBatch(records);
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
        return heldCount;
    }

    /** The partitions this consumer owns now (as of its last rebalance); empty before it joins. */
    public Set<TopicPartition> assignment() {
        return assignment;
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

    private void shutDown() {
        try {
            if (!finishedOffsets.isEmpty()) {
                try {
                    consumer.commitSync(finishedOffsets);
                } catch (KafkaException e) {
                    logCommitFailure("final offset commit of " + clientId, e);
                }
            }
            consumer.close();
        } catch (KafkaException e) {
            LOG.debug("closing Kafka consumer {} failed: {}", clientId, e.toString());
        } finally {
            if (deadLetters != null) {
                deadLetters.close();
            }
            keyDeserializer.close();
            valueDeserializer.close();
            watermarks.clear();
            if (parked != null) {
                parked.clear();
            }
            heldCount = 0;
            assignment = Set.of();
            stopped.countDown();
            LOG.info("fenced consumer {} of group {} stopped", clientId, groupId);
        }
    }

    /** Without a store, Kafka's committed offsets are the only record of progress: a failure matters. */
    private void logCommitFailure(String what, KafkaException e) {
        if (store == null) {
            LOG.warn(
                    "{} to Kafka failed; records after the last committed offset will be handled again: {}",
                    what,
                    e.toString());
        } else {
            LOG.debug("{} to Kafka failed (the store has the offsets): {}", what, e.toString());
        }
    }

    private void handleBatch(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        Batch batch = new Batch();
        unitOpen = true;
        unitAborted = false;
        try {
            if (store == null) {
                handleUnit(null, records, batch);
            } else {
                store.commit(groupId, tx -> handleUnit(tx, records, batch));
            }
        } catch (UnitAbortedException e) {
            rollback(batch);
            LOG.info("group {}: rebalance during a unit of work; it was rolled back and is read again", groupId);
            rewind(batch);
            return;
        } catch (StalePartitionStateException e) {
            rollback(batch);
            LOG.warn("group {}: {}; reloading the batch's partitions from the store", groupId, e.getMessage());
            rewind(batch);
            if (batch.failure != null) {
                throw batch.failure;
            }
            return;
        } catch (RuntimeException e) {
            rollback(batch);
            throw e;
        } finally {
            unitOpen = false;
        }
        int held = heldCount;
        for (PartitionBatch p : batch.partitions.values()) {
            held += p.watermarks.commit();
            if (p.nextOffset >= 0) { // -1: a plain handler failed on the partition's first record
                storedOffsets.put(p.partition, p.nextOffset);
                finishedOffsets.put(p.partition, new OffsetAndMetadata(p.nextOffset));
            }
            meters.accepted(p.partition.topic(), p.accepted);
            meters.dropped(p.partition.topic(), p.dropped);
            for (Map.Entry<DeadLetterReason, Integer> d : p.deadLettered.entrySet()) {
                meters.deadLettered(p.partition.topic(), d.getKey().name(), d.getValue());
            }
        }
        heldCount = held;
        consumer.commitAsync(new HashMap<>(finishedOffsets), (offsets, e) -> {
            if (e != null) {
                LOG.debug("async offset commit of {} to Kafka failed: {}", clientId, e.toString());
            }
        });
        if (batch.failure != null) {
            throw batch.failure;
        }
    }

    /**
     * One unit of work: the polled records and, with {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG},
     * more polls until the unit is big or old enough. A rebalance inside the unit aborts it.
     */
    private List<PartitionProgress> handleUnit(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> first, Batch batch) {
        long deadline = System.nanoTime() + commitInterval.toNanos();
        ConsumerRecords<ByteBuffer, ByteBuffer> records = first;
        while (handlePolled(tx, records, batch)
                && batch.records < commitMaxRecords
                && System.nanoTime() < deadline
                && state == State.RUNNING) {
            try {
                records = consumer.poll(Duration.ZERO);
            } catch (WakeupException e) {
                if (unitAborted) {
                    throw new UnitAbortedException(); // the same poll revoked partitions of this unit
                }
                break; // close() was called: commit what this unit did, then the loop ends
            }
            if (unitAborted) {
                // This poll's records are not in the unit; without a seek their partitions would move past them.
                for (TopicPartition partition : records.partitions()) {
                    if (watermarks.containsKey(partition)) {
                        consumer.seek(
                                partition, records.records(partition).get(0).offset());
                    }
                }
                throw new UnitAbortedException();
            }
            if (records.isEmpty()) {
                break;
            }
        }
        awaitDeadLetters(batch);
        List<PartitionProgress> progress = new ArrayList<>(batch.partitions.size());
        for (PartitionBatch p : batch.partitions.values()) {
            if (p.nextOffset >= 0) {
                progress.add(new PartitionProgress(
                        p.partition,
                        storedOffsets.getOrDefault(p.partition, -1L),
                        p.nextOffset,
                        p.watermarks.raised()));
            }
        }
        return progress;
    }

    /** Returns false if a plain handler failed: the unit stops at that record. */
    private boolean handlePolled(Object tx, ConsumerRecords<ByteBuffer, ByteBuffer> records, Batch batch) {
        for (TopicPartition partition : records.partitions()) {
            PartitionBatch p = batch.partitions.get(partition);
            if (p == null) {
                PartitionWatermarks current = watermarks.get(partition);
                if (current == null) {
                    throw new IllegalStateException("records of " + partition + " arrived before its watermarks");
                }
                current.begin();
                p = new PartitionBatch(partition, current);
                batch.partitions.put(partition, p);
            }
            for (ConsumerRecord<ByteBuffer, ByteBuffer> record : records.records(partition)) {
                if (p.firstOffset < 0) {
                    p.firstOffset = record.offset();
                }
                if (!handleRecord(tx, record, p.watermarks, p, batch)) {
                    return false;
                }
                p.nextOffset = record.offset() + 1;
                batch.records++;
            }
        }
        return true;
    }

    /** Returns false if the handler failed and the batch must stop here (plain handlers only). */
    private boolean handleRecord(
            Object tx,
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            PartitionWatermarks current,
            PartitionBatch p,
            Batch batch) {
        if (record.key() == null) {
            deadLetter(record, DeadLetterReason.MISSING_KEY, "record has no key", p, batch);
            return true;
        }
        Header header = record.headers().lastHeader(FenceTokenHeader.NAME);
        if (header == null) {
            deadLetter(record, DeadLetterReason.MISSING_TOKEN, "no " + FenceTokenHeader.NAME + " header", p, batch);
            return true;
        }
        long token;
        try {
            token = FenceTokenHeader.decode(header.value());
        } catch (InvalidFenceTokenException e) {
            deadLetter(record, DeadLetterReason.UNREADABLE_TOKEN, e.getMessage(), p, batch);
            return true;
        }
        ByteBuffer keyBuffer = record.key();
        byte[] keyArray;
        int keyOffset;
        int keyLength = keyBuffer.remaining();
        boolean keyCopied = !keyBuffer.hasArray();
        if (keyCopied) {
            keyArray = bytes(keyBuffer);
            keyOffset = 0;
        } else {
            keyArray = keyBuffer.array();
            keyOffset = keyBuffer.arrayOffset() + keyBuffer.position();
        }
        PartitionWatermarks.Mark mark = current.find(keyArray, keyOffset, keyLength);
        long watermark = mark == null ? 0 : mark.current();
        if (token < watermark || (strict && token == watermark)) {
            String detail = "token " + token + " is " + (token < watermark ? "older than" : "equal to") + " watermark "
                    + watermark + " of key " + Keys.describe(bytes(keyBuffer));
            if (stalePolicy == StaleRecordPolicy.DEAD_LETTER) {
                deadLetter(record, DeadLetterReason.STALE_TOKEN, detail, p, batch);
            } else {
                p.dropped++;
                LOG.debug(
                        "group {} dropped {}-{}@{}: {}",
                        groupId,
                        record.topic(),
                        record.partition(),
                        record.offset(),
                        detail);
            }
            return true;
        }
        // A new key is copied before the handler runs: a ByteBuffer or byte[] handler sees the fetched bytes
        // and could change them.
        byte[] newKey = mark != null
                ? null
                : keyCopied ? keyArray : Arrays.copyOfRange(keyArray, keyOffset, keyOffset + keyLength);
        ByteBuffer valueBuffer = record.value();
        int valuePosition = valueBuffer == null ? 0 : valueBuffer.position();
        int valueLimit = valueBuffer == null ? 0 : valueBuffer.limit();
        int keyPosition = keyBuffer.position();
        int keyLimit = keyBuffer.limit();
        ConsumerRecord<K, V> typed;
        try {
            typed = deserialize(record);
        } catch (RuntimeException e) {
            // a deserializer may have read part of a buffer: the dead letter gets all of it
            keyBuffer.limit(keyLimit).position(keyPosition);
            if (valueBuffer != null) {
                valueBuffer.limit(valueLimit).position(valuePosition);
            }
            deadLetter(record, DeadLetterReason.UNREADABLE_RECORD, "deserializer failed: " + e, p, batch);
            return true;
        }
        try {
            handler.handle(tx, typed, token);
        } catch (RuntimeException e) {
            RecordHandlingException failure = new RecordHandlingException(p.partition, record.offset(), token, e);
            if (transactional) {
                throw failure;
            }
            batch.failure = failure;
            return false;
        }
        current.raise(newKey, mark, token);
        p.accepted++;
        return true;
    }

    private ConsumerRecord<K, V> deserialize(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        K key = keyDeserializer.deserialize(record.topic(), record.headers(), record.key());
        V value = valueDeserializer.deserialize(record.topic(), record.headers(), record.value());
        return new ConsumerRecord<>(
                record.topic(),
                record.partition(),
                record.offset(),
                record.timestamp(),
                record.timestampType(),
                record.serializedKeySize(),
                record.serializedValueSize(),
                key,
                value,
                record.headers(),
                record.leaderEpoch());
    }

    private void deadLetter(
            ConsumerRecord<ByteBuffer, ByteBuffer> record,
            DeadLetterReason reason,
            String detail,
            PartitionBatch p,
            Batch batch) {
        String topic =
                deadLetterTopic.isEmpty() ? record.topic() + FencedConsumerConfig.DEAD_LETTER_SUFFIX : deadLetterTopic;
        Headers headers = new RecordHeaders(record.headers().toArray());
        headers.add(DeadLetterHeaders.REASON, utf8(reason.name()));
        headers.add(DeadLetterHeaders.DETAIL, utf8(detail));
        headers.add(DeadLetterHeaders.ORIGIN_TOPIC, utf8(record.topic()));
        headers.add(DeadLetterHeaders.ORIGIN_PARTITION, utf8(Integer.toString(record.partition())));
        headers.add(DeadLetterHeaders.ORIGIN_OFFSET, utf8(Long.toString(record.offset())));
        headers.add(DeadLetterHeaders.GROUP, utf8(groupId));
        LOG.debug(
                "group {} dead-letters {}-{}@{} to {} ({}): {}",
                groupId,
                record.topic(),
                record.partition(),
                record.offset(),
                topic,
                reason,
                detail);
        try {
            batch.deadLetterWrites.add(deadLetters.send(
                    new ProducerRecord<>(topic, null, null, bytes(record.key()), bytes(record.value()), headers)));
        } catch (KafkaException e) {
            throw new DeadLetterException(
                    "could not send " + record.topic() + "-" + record.partition() + "@" + record.offset() + " to "
                            + topic,
                    e);
        }
        p.deadLettered.merge(reason, 1, Integer::sum);
    }

    private void awaitDeadLetters(Batch batch) {
        if (batch.deadLetterWrites.isEmpty()) {
            return;
        }
        deadLetters.flush();
        for (Future<RecordMetadata> write : batch.deadLetterWrites) {
            try {
                write.get();
            } catch (ExecutionException e) {
                throw new DeadLetterException("dead-letter write failed: " + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DeadLetterException("interrupted while writing dead letters", e);
            }
        }
    }

    private void rollback(Batch batch) {
        for (PartitionBatch p : batch.partitions.values()) {
            p.watermarks.rollback();
        }
    }

    /** After a rolled-back unit: reload what the store has and read again from there. */
    private void rewind(Batch batch) {
        for (PartitionBatch p : batch.partitions.values()) {
            if (!watermarks.containsKey(p.partition) || p.firstOffset < 0) {
                continue; // revoked meanwhile: its new owner reads it from the store
            }
            if (store == null) {
                consumer.seek(p.partition, p.firstOffset); // the rolled-back watermarks are right as they are
                continue;
            }
            assign(p.partition);
            long stored = storedOffsets.get(p.partition);
            consumer.seek(p.partition, stored >= 0 ? stored : p.firstOffset);
        }
    }

    private void assign(TopicPartition partition) {
        if (store == null) {
            PartitionWatermarks kept = parked.remove(partition);
            PartitionWatermarks own = kept != null ? kept : new PartitionWatermarks(Map.of());
            watermarks.put(partition, own);
            heldCount += own.size();
            storedOffsets.put(partition, -1L);
            finishedOffsets.remove(partition);
            LOG.info("group {} took {} with {} watermarks kept from before", groupId, partition, own.size());
            return;
        }
        PartitionState loaded = store.load(groupId, partition);
        PartitionWatermarks previous = watermarks.put(partition, new PartitionWatermarks(loaded.watermarks()));
        heldCount += loaded.watermarks().size() - (previous == null ? 0 : previous.size());
        storedOffsets.put(partition, loaded.nextOffset());
        finishedOffsets.remove(partition);
        if (loaded.nextOffset() >= 0) {
            consumer.seek(partition, loaded.nextOffset());
        }
        LOG.info(
                "group {} took {} with {} watermarks, next offset {}",
                groupId,
                partition,
                loaded.watermarks().size(),
                loaded.nextOffset() >= 0 ? loaded.nextOffset() : "from Kafka");
    }

    private void release(Collection<TopicPartition> partitions, boolean commit) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition partition : partitions) {
            PartitionWatermarks dropped = watermarks.remove(partition);
            if (dropped != null) {
                heldCount -= dropped.size();
                if (parked != null) {
                    parked.put(partition, dropped);
                }
            }
            storedOffsets.remove(partition);
            OffsetAndMetadata finished = finishedOffsets.remove(partition);
            if (finished != null) {
                offsets.put(partition, finished);
            }
        }
        if (commit && !offsets.isEmpty()) {
            try {
                consumer.commitSync(offsets);
            } catch (KafkaException e) {
                logCommitFailure("offset commit on revoke for " + offsets.keySet(), e);
            }
        }
        if (!partitions.isEmpty()) {
            LOG.info("group {} released {}{}", groupId, partitions, commit ? "" : " (lost)");
        }
    }

    /** The buffer's remaining bytes, copied; the buffer is not moved. */
    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    private static WatermarkStore<Object> castStore(WatermarkStore<?> store) {
        // Safe: the consumer only passes the store's own unit of work back to the matching handler.
        return (WatermarkStore<Object>) store;
    }

    private static Map<String, Object> deadLetterProducerConfig(
            Map<String, Object> consumerConfig, Map<String, Object> overrides, String clientId) {
        Map<String, Object> config = new HashMap<>();
        for (Map.Entry<String, Object> entry : consumerConfig.entrySet()) {
            String key = entry.getKey();
            if (key.equals(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG)
                    || key.equals("client.dns.lookup")
                    || key.startsWith("security.")
                    || key.startsWith("sasl.")
                    || key.startsWith("ssl.")) {
                config.put(key, entry.getValue());
            }
        }
        config.put(ProducerConfig.CLIENT_ID_CONFIG, clientId + "-dead-letters");
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.putAll(overrides);
        return config;
    }

    private void abortOpenUnit() {
        if (unitOpen) {
            unitAborted = true;
        }
    }

    /** Rolls back a unit of work that spanned a rebalance. */
    private static final class UnitAbortedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnitAbortedException() {
            super("rebalance during a unit of work", null, false, false);
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            abortOpenUnit();
            release(partitions, true);
            assignment = Set.copyOf(watermarks.keySet());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            abortOpenUnit();
            release(partitions, false);
            assignment = Set.copyOf(watermarks.keySet());
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            abortOpenUnit();
            for (TopicPartition partition : partitions) {
                assign(partition);
            }
            assignment = Set.copyOf(watermarks.keySet());
        }
    }

    private static final class Batch {
        final Map<TopicPartition, PartitionBatch> partitions = new LinkedHashMap<>();
        final List<Future<RecordMetadata>> deadLetterWrites = new ArrayList<>();
        long records;
        RecordHandlingException failure;
    }

    private static final class PartitionBatch {
        final TopicPartition partition;
        final PartitionWatermarks watermarks;
        final Map<DeadLetterReason, Integer> deadLettered = new HashMap<>();
        long firstOffset = -1;
        long nextOffset = -1;
        long accepted;
        long dropped;

        PartitionBatch(TopicPartition partition, PartitionWatermarks watermarks) {
            this.partition = partition;
            this.watermarks = watermarks;
        }
    }

    /**
     * Settings of a {@link FencedConsumer}; every setter checks its value and fails at once. Required:
     * {@code bootstrap.servers} and {@code group.id} among the properties, at least one topic, a handler.
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
        private boolean strict = FencedConsumerConfig.DEFAULT_STRICT;
        private StaleRecordPolicy stalePolicy = StaleRecordPolicy.DEAD_LETTER;
        private String deadLetterTopic = FencedConsumerConfig.DEFAULT_DEAD_LETTER_TOPIC;
        private Duration pollTimeout = Duration.ofMillis(FencedConsumerConfig.DEFAULT_POLL_TIMEOUT_MS);
        private Duration closeTimeout = Duration.ofMillis(FencedConsumerConfig.DEFAULT_CLOSE_TIMEOUT_MS);
        private long commitMaxRecords = FencedConsumerConfig.DEFAULT_COMMIT_MAX_RECORDS;
        private Duration commitInterval = Duration.ofMillis(FencedConsumerConfig.DEFAULT_COMMIT_INTERVAL_MS);
        private MeterRegistry meterRegistry = Metrics.globalRegistry;

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
                deadLetterProducer.put(producerKey, value);
                return this;
            }
            if (key.startsWith(FencedConsumerConfig.PREFIX)) {
                try {
                    switch (key) {
                        case FencedConsumerConfig.DEAD_LETTER_TOPIC_CONFIG -> deadLetterTopic(String.valueOf(value));
                        case FencedConsumerConfig.STALE_RECORDS_CONFIG ->
                            staleRecords(StaleRecordPolicy.fromConfig(value));
                        case FencedConsumerConfig.STRICT_CONFIG -> strict(parseBoolean(key, value));
                        case FencedConsumerConfig.POLL_TIMEOUT_MS_CONFIG ->
                            pollTimeout(Duration.ofMillis(parseLong(key, value)));
                        case FencedConsumerConfig.CLOSE_TIMEOUT_MS_CONFIG ->
                            closeTimeout(Duration.ofMillis(parseLong(key, value)));
                        case FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG -> commitMaxRecords(parseLong(key, value));
                        case FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG ->
                            commitInterval(Duration.ofMillis(parseLong(key, value)));
                        default ->
                            throw new IllegalArgumentException(
                                    "unknown setting " + key + "; known: " + FencedConsumerConfig.KEYS);
                    }
                } catch (IllegalArgumentException e) {
                    // the builder method names its own parameter; the caller wrote the key
                    if (!FencedConsumerConfig.KEYS.contains(key)
                            || (e.getMessage() != null && e.getMessage().startsWith(key))) {
                        throw e;
                    }
                    throw new IllegalArgumentException(key + "=" + value + ": " + e.getMessage(), e);
                }
                return this;
            }
            switch (key) {
                case ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG -> {
                    if (parseBoolean(key, value)) {
                        throw new IllegalArgumentException(key + "=true is refused: the fenced consumer commits"
                                + " offsets itself, only for records whose handling finished");
                    }
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
            if (this.store != null) {
                throw new IllegalStateException("a watermark store is already set; transactionalHandler sets its own");
            }
            this.store = castStore(store);
            @SuppressWarnings("unchecked")
            TransactionalRecordHandler<Object, K, V> cast = (TransactionalRecordHandler<Object, K, V>) handler;
            this.handler = cast;
            this.transactional = true;
            return this;
        }

        /**
         * Where watermarks and offsets are kept, for a {@link #handler}. Default: none; the consumer keeps
         * its watermarks in its own heap (also those of partitions it gave away, should they come back) and
         * its offsets in Kafka, which is the cheapest but protects only against stale records this consumer
         * instance saw the fresher ones of. Share an {@link InMemoryWatermarkStore} among the consumers of a
         * JVM, or use {@link PostgresWatermarkStore}, for watermarks that follow partitions and survive
         * restarts.
         */
        public Builder<K, V> watermarkStore(WatermarkStore<?> store) {
            Objects.requireNonNull(store, "store");
            if (transactional) {
                throw new IllegalStateException("transactionalHandler already set the store");
            }
            this.store = castStore(store);
            return this;
        }

        /** {@value FencedConsumerConfig#STRICT_CONFIG}: {@value FencedConsumerConfig#STRICT_DOC} */
        public Builder<K, V> strict(boolean strict) {
            this.strict = strict;
            return this;
        }

        /** {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}: {@value FencedConsumerConfig#STALE_RECORDS_DOC} */
        public Builder<K, V> staleRecords(StaleRecordPolicy policy) {
            this.stalePolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_CONFIG}: {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_DOC}
         */
        public Builder<K, V> deadLetterTopic(String topic) {
            Objects.requireNonNull(topic, "topic");
            String trimmed = topic.trim();
            if (!trimmed.isEmpty() && !trimmed.matches("[a-zA-Z0-9._-]{1,249}")) {
                throw new IllegalArgumentException("'" + topic + "' is not a legal Kafka topic name");
            }
            this.deadLetterTopic = trimmed;
            return this;
        }

        /** {@value FencedConsumerConfig#POLL_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#POLL_TIMEOUT_MS_DOC} */
        public Builder<K, V> pollTimeout(Duration timeout) {
            this.pollTimeout = requirePositive(timeout, "pollTimeout");
            return this;
        }

        /**
         * {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_DOC}
         */
        public Builder<K, V> closeTimeout(Duration timeout) {
            this.closeTimeout = requirePositive(timeout, "closeTimeout");
            return this;
        }

        /**
         * {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG}: {@value
         * FencedConsumerConfig#COMMIT_MAX_RECORDS_DOC}
         */
        public Builder<K, V> commitMaxRecords(long records) {
            if (records < 0) {
                throw new IllegalArgumentException("commitMaxRecords must be >= 0, got " + records);
            }
            this.commitMaxRecords = records;
            return this;
        }

        /**
         * {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG}: {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_DOC}
         */
        public Builder<K, V> commitInterval(Duration interval) {
            this.commitInterval = requirePositive(interval, "commitInterval");
            return this;
        }

        /** Where the counters go; default Micrometer's global registry. */
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
            return new FencedConsumer<>(this);
        }

        private void requireNoHandler() {
            if (handler != null) {
                throw new IllegalStateException("a handler is already set");
            }
        }

        private static Duration requirePositive(Duration duration, String name) {
            Objects.requireNonNull(duration, name);
            if (duration.isNegative() || duration.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, got " + duration);
            }
            return duration;
        }

        private static boolean parseBoolean(String key, Object value) {
            if (value instanceof Boolean b) {
                return b;
            }
            String text = String.valueOf(value).trim().toLowerCase(Locale.ROOT);
            if (text.equals("true") || text.equals("false")) {
                return Boolean.parseBoolean(text);
            }
            throw new IllegalArgumentException(key + " must be true or false, got '" + value + "'");
        }

        private static long parseLong(String key, Object value) {
            if (value instanceof Number n) {
                return n.longValue();
            }
            try {
                return Long.parseLong(String.valueOf(value).trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(key + " must be a whole number, got '" + value + "'", e);
            }
        }
    }

    @Override
    public String toString() {
        return "FencedConsumer[" + clientId + ", group " + groupId + ", " + topics + "]";
    }
}
