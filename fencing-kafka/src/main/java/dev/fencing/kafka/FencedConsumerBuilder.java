package dev.fencing.kafka;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.ConsumerSettings;
import dev.fencing.kafka.internal.FencedRowUnits;
import dev.fencing.kafka.internal.FencingSetting;
import dev.fencing.kafka.internal.FencingSettings;
import dev.fencing.kafka.internal.RetryPolicy;
import dev.fencing.kafka.spi.WatermarkStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Settings of a {@link FencedConsumer}; every setter checks its value and fails at once. Required:
 * {@code bootstrap.servers} and {@code group.id} among the properties, at least one topic, a handler,
 * and a watermark store (or the explicit {@link #heapOnlyWatermarksLostOnRestart()}).
 */
public final class FencedConsumerBuilder<K, V> {
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    final Deserializer<K> keyDeserializer;
    final Deserializer<V> valueDeserializer;
    private final Map<String, Object> kafka = new HashMap<>();
    private final List<String> topics = new ArrayList<>();
    private final Map<String, Object> deadLetterProducer = new HashMap<>();
    WatermarkStore<Object> store;
    TransactionalRecordHandler<Object, K, V> handler;
    boolean transactional;
    private FencedRowHandler<K, V> fencedRows; // with fencedRowStore: made into store and handler at build()
    private PostgresWatermarkStore fencedRowStore;
    private boolean heapOnly;
    private final Map<FencingSetting<?>, Object> fencing = new HashMap<>(); // given fencing.* values
    MeterRegistry meterRegistry; // null: no meters
    private Predicate<? super Throwable> retriedHandlerFailures = failure -> false;

    FencedConsumerBuilder(Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        this.keyDeserializer = Objects.requireNonNull(keyDeserializer, "keyDeserializer");
        this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
    }

    /**
     * Kafka consumer properties plus any {@link FencedConsumerConfig} {@code fencing.*} keys. {@code
     * auto.offset.reset} defaults to {@code earliest} here, not Kafka's {@code latest}: where neither the store
     * nor the group has an offset for a partition, {@code latest} would skip the records already in it.
     *
     * @throws IllegalArgumentException for {@code enable.auto.commit=true}, a deserializer class (give
     *     deserializer instances to {@link FencedConsumer#builder}), an unknown {@code fencing.*} key or a
     *     bad value
     */
    public FencedConsumerBuilder<K, V> properties(Map<String, ?> properties) {
        Objects.requireNonNull(properties, "properties");
        properties.forEach(this::property);
        return this;
    }

    /** One property, as in {@link #properties(Map)}. */
    public FencedConsumerBuilder<K, V> property(String key, Object value) {
        Objects.requireNonNull(key, "property key");
        Objects.requireNonNull(value, () -> "value of " + key);
        if (key.startsWith(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX)) {
            String producerKey = key.substring(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX.length());
            if (producerKey.isBlank()
                    || producerKey.equals(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG)
                    || producerKey.equals(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG)) {
                throw new IllegalArgumentException(key + " is refused: the dead-letter producer writes raw bytes");
            }
            if (producerKey.equals(ProducerConfig.MAX_BLOCK_MS_CONFIG)) {
                throw new IllegalArgumentException(key + " is refused: the dead-letter writes of a unit are bounded"
                        + " altogether by " + FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG + ", which sets it");
            }
            if (producerKey.equals(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
                throw new IllegalArgumentException(key + " is refused: dead letters are written outside any producer"
                        + " transaction (a transactional producer refuses every such write)");
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
            fencing.put(setting, setting.fromProperty(value));
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
    public FencedConsumerBuilder<K, V> topics(String... topics) {
        return topics(List.of(topics));
    }

    /** Topics to subscribe to. */
    public FencedConsumerBuilder<K, V> topics(Collection<String> topics) {
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
    public FencedConsumerBuilder<K, V> handler(RecordHandler<K, V> handler) {
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
    public <T> FencedConsumerBuilder<K, V> transactionalHandler(
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
     * Records whose effect is a fenced update of their key's row in a protected table ({@link
     * FencedRowHandler}): the row is the key's watermark, the updates of a unit go in one batch in the store's
     * transaction with its offsets, and a record whose row refuses its update is stale (dead-lettered or dropped
     * as {@link #staleRecords} says, committed with its unit). The serial consumer only: {@link
     * #maxConcurrency} above 1 is refused at {@link #build()}.
     */
    public FencedConsumerBuilder<K, V> fencedRowHandler(PostgresWatermarkStore store, FencedRowHandler<K, V> rows) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(rows, "rows");
        requireNoHandler();
        if (this.store != null || heapOnly) {
            throw new IllegalStateException(
                    heapOnly
                            ? "heapOnlyWatermarksLostOnRestart() is set; fencedRowHandler needs a store of its own"
                            : "a watermark store is already set; fencedRowHandler sets its own");
        }
        this.fencedRows = rows;
        this.fencedRowStore = store;
        return this;
    }

    /**
     * Where watermarks and offsets are kept, for a {@link #handler}. One of this, {@link
     * #transactionalHandler} or {@link #heapOnlyWatermarksLostOnRestart()} is required: there is no default,
     * because a consumer that forgets its watermarks applies stale records after a restart. {@link
     * PostgresWatermarkStore} survives restarts and is shared by every member of the group; an {@link
     * InMemoryWatermarkStore} is shared by the consumers of one JVM only.
     */
    public FencedConsumerBuilder<K, V> watermarkStore(WatermarkStore<?> store) {
        Objects.requireNonNull(store, "store");
        if (transactional || fencedRows != null) {
            throw new IllegalStateException("a transactional or fenced row handler already set the store");
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
     * forgotten too. Nor does it lock partitions: a member expelled from the group ({@code
     * max.poll.interval.ms} exceeded) goes on handling the records it holds while the partition's new owner
     * handles them too, so they can be applied twice and out of order. Use it for a single long-lived consumer
     * where that is acceptable, or for measurements; otherwise give a {@link #watermarkStore}.
     */
    public FencedConsumerBuilder<K, V> heapOnlyWatermarksLostOnRestart() {
        if (store != null || fencedRows != null) {
            throw new IllegalStateException("a watermark store is already set; choose one");
        }
        this.heapOnly = true;
        return this;
    }

    /** {@value FencedConsumerConfig#POLICY_CONFIG}: {@value FencedConsumerConfig#POLICY_DOC} */
    public FencedConsumerBuilder<K, V> fencePolicy(FencePolicy policy) {
        return set(FencingSettings.POLICY, policy);
    }

    /** {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}: {@value FencedConsumerConfig#STALE_RECORDS_DOC} */
    public FencedConsumerBuilder<K, V> staleRecords(StaleRecordPolicy policy) {
        return set(FencingSettings.STALE_RECORDS, policy);
    }

    /**
     * {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_CONFIG}: {@value FencedConsumerConfig#DEAD_LETTER_TOPIC_DOC}
     */
    public FencedConsumerBuilder<K, V> deadLetterTopic(String topic) {
        Objects.requireNonNull(topic, "topic");
        return set(FencingSettings.DEAD_LETTER_TOPIC, topic.trim());
    }

    /** {@value FencedConsumerConfig#POLL_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#POLL_TIMEOUT_MS_DOC} */
    public FencedConsumerBuilder<K, V> pollTimeout(Duration timeout) {
        return set(FencingSettings.POLL_TIMEOUT, timeout);
    }

    /**
     * {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG}: {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_DOC}
     */
    public FencedConsumerBuilder<K, V> closeTimeout(Duration timeout) {
        return set(FencingSettings.CLOSE_TIMEOUT, timeout);
    }

    /**
     * {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}: {@value
     * FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_DOC}
     */
    public FencedConsumerBuilder<K, V> deadLetterTimeout(Duration timeout) {
        return set(FencingSettings.DEAD_LETTER_TIMEOUT, timeout);
    }

    /**
     * {@value FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG}: {@value
     * FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_DOC}
     */
    public FencedConsumerBuilder<K, V> watermarkCacheMaxKeys(int maxKeys) {
        return set(FencingSettings.WATERMARK_CACHE_MAX_KEYS, maxKeys);
    }

    /**
     * {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG}: {@value
     * FencedConsumerConfig#COMMIT_MAX_RECORDS_DOC}
     */
    public FencedConsumerBuilder<K, V> commitMaxRecords(long records) {
        return set(FencingSettings.COMMIT_MAX_RECORDS, records);
    }

    /**
     * {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG}: {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_DOC}
     */
    public FencedConsumerBuilder<K, V> commitInterval(Duration interval) {
        return set(FencingSettings.COMMIT_INTERVAL, interval);
    }

    /**
     * {@value FencedConsumerConfig#MAX_CONCURRENCY_CONFIG}: {@value FencedConsumerConfig#MAX_CONCURRENCY_DOC}
     *
     * <p>Above 1 this is the key-parallel consumer (see {@link FencedConsumer}, "Key-parallel mode").
     *
     * @throws IllegalArgumentException if {@code n} is not from 1 to 4096, naming it
     */
    public FencedConsumerBuilder<K, V> maxConcurrency(int n) {
        return set(FencingSettings.MAX_CONCURRENCY, n);
    }

    /**
     * {@value FencedConsumerConfig#MAX_IN_FLIGHT_PER_PARTITION_CONFIG}: {@value
     * FencedConsumerConfig#MAX_IN_FLIGHT_PER_PARTITION_DOC}
     *
     * @throws IllegalArgumentException if {@code n} is not from 1 to 1,000,000, naming it
     */
    public FencedConsumerBuilder<K, V> maxInFlightPerPartition(int n) {
        return set(FencingSettings.MAX_IN_FLIGHT_PER_PARTITION, n);
    }

    /**
     * {@value FencedConsumerConfig#GROUP_MAX_RECORDS_CONFIG}: {@value FencedConsumerConfig#GROUP_MAX_RECORDS_DOC}
     *
     * @throws IllegalArgumentException if {@code n} is not from 1 to 10,000, naming it
     */
    public FencedConsumerBuilder<K, V> groupMaxRecords(int n) {
        return set(FencingSettings.GROUP_MAX_RECORDS, n);
    }

    /**
     * {@value FencedConsumerConfig#GROUP_MAX_MS_CONFIG}: {@value FencedConsumerConfig#GROUP_MAX_MS_DOC}
     *
     * @throws IllegalArgumentException if {@code time} is not positive, naming it
     */
    public FencedConsumerBuilder<K, V> groupMaxTime(Duration time) {
        return set(FencingSettings.GROUP_MAX_TIME, time);
    }

    /**
     * Back-off between attempts after transient failures: {@value FencedConsumerConfig#RETRY_BACKOFF_MS_CONFIG}
     * ({@code initial}) and {@value FencedConsumerConfig#RETRY_BACKOFF_MAX_MS_CONFIG} ({@code max}). {@value
     * FencedConsumerConfig#RETRY_BACKOFF_MS_DOC}
     *
     * @throws IllegalArgumentException if either is not positive, or {@code max} is below {@code initial}
     */
    public FencedConsumerBuilder<K, V> retryBackoff(Duration initial, Duration max) {
        Objects.requireNonNull(initial, "initial");
        Objects.requireNonNull(max, "max");
        if (max.compareTo(initial) < 0) {
            throw new IllegalArgumentException("retryBackoff: max " + max + " is below initial " + initial);
        }
        set(FencingSettings.RETRY_BACKOFF, initial);
        return set(FencingSettings.RETRY_BACKOFF_MAX, max);
    }

    /**
     * {@value FencedConsumerConfig#RETRY_MAX_MS_CONFIG}: {@value FencedConsumerConfig#RETRY_MAX_MS_DOC}
     *
     * @throws IllegalArgumentException if {@code time} is negative
     */
    public FencedConsumerBuilder<K, V> retryMaxTime(Duration time) {
        return set(FencingSettings.RETRY_MAX_TIME, time);
    }

    /**
     * Retries the handler's own failures that {@code retried} accepts (it is given what the handler threw; an
     * {@code Error} is never retried), with the back-off of transient store failures. By default a handler
     * failure stops the consumer, except, in a transactional handler, a transient failure of the store's
     * database (its statements run in the store's transaction). With a plain handler a retried record is
     * handled again: its first attempt's effects stay, as after a crash. With a transactional handler they were
     * rolled back.
     *
     * <pre>{@code
     * .retryHandlerFailures(e -> e instanceof IllegalStateException) // opt in
     * }</pre>
     */
    public FencedConsumerBuilder<K, V> retryHandlerFailures(Predicate<? super Throwable> retried) {
        this.retriedHandlerFailures = Objects.requireNonNull(retried, "retried");
        return this;
    }

    /**
     * Counts records and watermarks in this registry (the meters are listed in the {@link FencedConsumer}
     * javadoc). Without one the consumer counts nothing; it never registers in Micrometer's global registry
     * unasked.
     */
    public FencedConsumerBuilder<K, V> meterRegistry(MeterRegistry registry) {
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
        if (fencedRows != null) {
            if (get(FencingSettings.MAX_CONCURRENCY) > 1) {
                throw new IllegalStateException("fencedRowHandler writes a unit's row updates at the unit's end, which"
                        + " only the serial consumer has; " + FencedConsumerConfig.MAX_CONCURRENCY_CONFIG + "="
                        + get(FencingSettings.MAX_CONCURRENCY) + " is refused with it: use maxConcurrency(1)");
            }
            FencedRowUnits<K, V> units = new FencedRowUnits<>(
                    fencedRowStore,
                    fencedRowStore.appliedOffsetStore(),
                    fencedRows,
                    keyDeserializer,
                    get(FencingSettings.POLICY));
            @SuppressWarnings("unchecked") // the consumer passes the store's own unit of work back to its handler
            TransactionalRecordHandler<Object, K, V> unitsHandler =
                    (TransactionalRecordHandler<Object, K, V>) (TransactionalRecordHandler<?, K, V>) units;
            this.store = castStore(units);
            this.handler = unitsHandler;
            this.transactional = true;
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
        int maxConcurrency = get(FencingSettings.MAX_CONCURRENCY);
        if (maxConcurrency > 1) {
            if (get(FencingSettings.COMMIT_MAX_RECORDS) != 0) {
                throw new IllegalStateException(FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG + "="
                        + get(FencingSettings.COMMIT_MAX_RECORDS) + " is for the serial consumer; with "
                        + FencedConsumerConfig.MAX_CONCURRENCY_CONFIG + "=" + maxConcurrency + " each partition's"
                        + " offset is committed every " + FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG
                        + " up to its lowest unfinished record");
            }
            if (transactional && !((WatermarkStore<?>) store instanceof PostgresWatermarkStore)) {
                throw new IllegalStateException(
                        "a transactionalHandler with " + FencedConsumerConfig.MAX_CONCURRENCY_CONFIG
                                + "=" + maxConcurrency + " needs PostgresWatermarkStore (each record commits in a"
                                + " transaction of its own, with its key's applied offset); "
                                + store.getClass().getSimpleName() + " cannot do that. Use a plain handler, or"
                                + " maxConcurrency(1)");
            }
        }
        if (get(FencingSettings.RETRY_BACKOFF_MAX).compareTo(get(FencingSettings.RETRY_BACKOFF)) < 0) {
            throw new IllegalStateException(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG + "="
                    + get(FencingSettings.RETRY_BACKOFF_MAX).toMillis() + " is below "
                    + FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG + "="
                    + get(FencingSettings.RETRY_BACKOFF).toMillis());
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
                get(FencingSettings.COMMIT_INTERVAL),
                maxConcurrency,
                get(FencingSettings.MAX_IN_FLIGHT_PER_PARTITION),
                get(FencingSettings.GROUP_MAX_RECORDS),
                get(FencingSettings.GROUP_MAX_TIME),
                new RetryPolicy(
                        get(FencingSettings.RETRY_BACKOFF),
                        get(FencingSettings.RETRY_BACKOFF_MAX),
                        get(FencingSettings.RETRY_MAX_TIME),
                        transactional,
                        retriedHandlerFailures));
        return new FencedConsumer<>(this, settings);
    }

    private <T> FencedConsumerBuilder<K, V> set(FencingSetting<T> setting, T value) {
        fencing.put(setting, setting.checked(value));
        return this;
    }

    private <T> T get(FencingSetting<T> setting) {
        @SuppressWarnings("unchecked") // put only by set() and property(), each with its setting's type
        T value = (T) fencing.getOrDefault(setting, setting.defaultValue());
        return value;
    }

    private void requireNoHandler() {
        if (handler != null || fencedRows != null) {
            throw new IllegalStateException("a handler is already set");
        }
    }

    @SuppressWarnings("unchecked")
    private static WatermarkStore<Object> castStore(WatermarkStore<?> store) {
        // Safe: the consumer only passes the store's own unit of work back to the matching handler.
        return (WatermarkStore<Object>) store;
    }
}
