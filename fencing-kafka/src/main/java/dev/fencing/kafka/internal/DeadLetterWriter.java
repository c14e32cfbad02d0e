package dev.fencing.kafka.internal;

import dev.fencing.kafka.DeadLetterException;
import dev.fencing.kafka.DeadLetterHeaders;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FencedConsumerConfig;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes refused records to their dead-letter topic, with headers saying why and where from. The serial
 * consumer sends them as its records are decided and awaits them ({@link #awaitAll()}) only before it saves or
 * commits an offset that passes them; each write must be acknowledged within the dead-letter timeout of its
 * own send, and the first write that fails or is late ends the unit with a {@link DeadLetterException} naming
 * the topic and the record's offset. Poll thread only, except {@link #sendAndAwait}.
 */
public final class DeadLetterWriter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterWriter.class);
    /**
     * The producer's linger for the serial consumer, whose dead letters are awaited only before the next save:
     * a few milliseconds gather a unit's dead letters into fewer requests, and {@link #awaitAll()} flushes the
     * producer, so that a unit never waits the linger out.
     */
    public static final Duration BATCHED_LINGER = Duration.ofMillis(5);

    private final String groupId;
    private final String deadLetterTopic; // empty: <source topic>.dlt
    private final Duration timeout;
    private final Map<String, Object> producerConfig;
    private KafkaProducer<byte[], byte[]> producer;
    /**
     * Runs {@code producer.flush()} for {@link #awaitAll()}, which never calls it on the poll thread (it has no
     * timeout). One thread, at most one flush waiting behind the running one: a request made while one waits
     * is covered by it, as it starts after the request.
     */
    private ThreadPoolExecutor flusher;

    private final boolean lingers; // linger.ms is not 0: a write waited for at once is flushed first

    private final List<Write> pending = new ArrayList<>();
    private int unchecked; // pending writes before this index are known to be acknowledged

    /** A write sent and not yet awaited; {@code deadline} is the {@code System.nanoTime()} its ack is due by. */
    private record Write(String topic, String origin, Future<RecordMetadata> ack, long deadline) {}

    /**
     * @param consumerConfig the consumer's Kafka settings: the producer takes their bootstrap and security ones
     * @param overrides {@code fencing.dead.letter.producer.*} settings, without the prefix
     * @param linger the producer's {@code linger.ms} unless {@code overrides} set it: a little for a writer whose
     *     sends are awaited later in bulk, none for one that awaits each send at once
     */
    public DeadLetterWriter(
            String groupId,
            String clientId,
            String deadLetterTopic,
            Duration timeout,
            Map<String, Object> consumerConfig,
            Map<String, Object> overrides,
            Duration linger) {
        this.groupId = groupId;
        this.deadLetterTopic = deadLetterTopic;
        this.timeout = timeout;
        this.producerConfig = producerConfig(consumerConfig, overrides, clientId, timeout, linger);
        this.lingers = lingers(producerConfig.get(ProducerConfig.LINGER_MS_CONFIG));
    }

    /** Connects; called by the poll thread when the loop starts, so that a consumer never run opens nothing. */
    public void open() {
        producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
        String name = producerConfig.get(ProducerConfig.CLIENT_ID_CONFIG) + "-flush";
        flusher = new ThreadPoolExecutor(
                1,
                1,
                1,
                TimeUnit.MINUTES,
                new ArrayBlockingQueue<>(1),
                runnable -> {
                    Thread thread = new Thread(runnable, name);
                    thread.setDaemon(true);
                    return thread;
                },
                new ThreadPoolExecutor.DiscardPolicy());
        flusher.allowCoreThreadTimeOut(true); // an idle thread ends: none is kept for a producer that rarely lingers
    }

    /**
     * Has the producer fetch the metadata of the dead-letter topics of {@code topics} now, when the loop starts,
     * so that the first dead letter does not wait for it on the thread that sends it (4 to 5 ms, a metadata
     * round trip, measured on the benchmarks' embedded broker; more on a remote cluster). A failure here is
     * left to the first send to meet and report; an interrupt is not swallowed.
     */
    public void fetchMetadata(Collection<String> topics) {
        for (String topic : topics.stream().map(this::topicFor).distinct().toList()) {
            try {
                producer.partitionsFor(topic);
            } catch (InterruptException e) {
                throw e;
            } catch (KafkaException e) {
                LOG.debug(
                        "group {}: no metadata for dead-letter topic {} yet ({}); the first send waits for it",
                        groupId,
                        topic,
                        e.toString());
            }
        }
    }

    /** The dead-letter topic of records from {@code topic}. */
    public String topicFor(String topic) {
        return deadLetterTopic.isEmpty() ? topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX : deadLetterTopic;
    }

    /** The bootstrap servers, as a person would type them. */
    public String bootstrapServers() {
        Object servers = producerConfig.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
        return servers instanceof List<?> list
                ? String.join(",", list.stream().map(String::valueOf).toList())
                : String.valueOf(servers);
    }

    /** Starts a unit of work: no writes pending. */
    public void begin() {
        pending.clear();
        unchecked = 0;
    }

    /**
     * Sends one refused record (key and value as fetched) without waiting for its acknowledgement, which is due
     * within the dead-letter timeout of this send. Fails early if an earlier write of the unit already failed
     * or is overdue.
     *
     * @throws DeadLetterException if the send fails at once, or an earlier write failed or is late
     */
    public void send(ConsumerRecord<ByteBuffer, ByteBuffer> record, DeadLetterReason reason, String detail) {
        String topic = topicFor(record.topic());
        String origin = record.topic() + "-" + record.partition() + " offset " + record.offset();
        long now = System.nanoTime();
        while (unchecked < pending.size()) {
            Write oldest = pending.get(unchecked);
            if (!oldest.ack().isDone()) {
                if (now - oldest.deadline() > 0) {
                    awaitAll(); // throws for the late write, or an earlier one that failed
                }
                break;
            }
            if (failed(oldest.ack())) {
                awaitAll(); // throws for the first write that failed
            }
            unchecked++;
        }
        LOG.debug("group {} dead-letters {} to {} ({}): {}", groupId, origin, topic, reason, detail);
        try {
            pending.add(new Write(
                    topic, origin, producer.send(deadLetter(topic, record, reason, detail)), now + timeout.toNanos()));
        } catch (KafkaException e) {
            throw new DeadLetterException(topic, origin, "the send failed: " + e, e);
        }
    }

    /** For a write that is done: whether it failed. */
    private static boolean failed(Future<RecordMetadata> done) {
        try {
            done.get();
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    /**
     * For the key-parallel consumer's workers: sends one refused record and waits for its acknowledgement, at
     * most {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}. Thread-safe (once {@link #open()} ran).
     *
     * @throws DeadLetterException if the write fails or is not acknowledged in time
     */
    public void sendAndAwait(ConsumerRecord<ByteBuffer, ByteBuffer> record, DeadLetterReason reason, String detail) {
        String topic = topicFor(record.topic());
        String origin = record.topic() + "-" + record.partition() + " offset " + record.offset();
        LOG.debug("group {} dead-letters {} to {} ({}): {}", groupId, origin, topic, reason, detail);
        try {
            Future<RecordMetadata> ack = producer.send(deadLetter(topic, record, reason, detail));
            if (lingers) {
                requestFlush(); // a linger set by fencing.dead.letter.producer.linger.ms: not waited out
            }
            ack.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (KafkaException e) {
            throw new DeadLetterException(topic, origin, "the send failed: " + e, e);
        } catch (ExecutionException e) {
            throw new DeadLetterException(topic, origin, "the write failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new DeadLetterException(topic, origin, "not acknowledged within " + limit(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DeadLetterException(topic, origin, "interrupted", e);
        }
    }

    private ProducerRecord<byte[], byte[]> deadLetter(
            String topic, ConsumerRecord<ByteBuffer, ByteBuffer> record, DeadLetterReason reason, String detail) {
        Headers headers = new RecordHeaders(record.headers().toArray());
        headers.add(DeadLetterHeaders.REASON, utf8(reason.name()));
        headers.add(DeadLetterHeaders.DETAIL, utf8(detail));
        headers.add(DeadLetterHeaders.ORIGIN_TOPIC, utf8(record.topic()));
        headers.add(DeadLetterHeaders.ORIGIN_PARTITION, utf8(Integer.toString(record.partition())));
        headers.add(DeadLetterHeaders.ORIGIN_OFFSET, utf8(Long.toString(record.offset())));
        headers.add(DeadLetterHeaders.GROUP, utf8(groupId));
        return new ProducerRecord<>(
                topic, null, null, FetchedBytes.copy(record.key()), FetchedBytes.copy(record.value()), headers);
    }

    /**
     * Waits for the unit's writes, in order, each until its own deadline. Called before any offset that passes
     * them is saved or committed. A write not yet acknowledged may still sit in the producer's linger, which
     * gathers a unit's dead letters into fewer requests while the unit goes on but is only a wait once the unit
     * waits for them: the producer is flushed first, on the flush thread, as {@code flush()} has no timeout (the
     * wait here keeps each write's own deadline whatever the flush does).
     *
     * @throws DeadLetterException for the first write that failed or was not acknowledged in time
     */
    public void awaitAll() {
        for (int i = unchecked; i < pending.size(); i++) {
            if (!pending.get(i).ack().isDone()) {
                requestFlush();
                break;
            }
        }
        for (Write write : pending) {
            long left = write.deadline() - System.nanoTime();
            try {
                write.ack().get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                throw new DeadLetterException(
                        write.topic(), write.origin(), "the write failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new DeadLetterException(write.topic(), write.origin(), "not acknowledged within " + limit(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DeadLetterException(write.topic(), write.origin(), "interrupted", e);
            }
        }
    }

    /**
     * Whether {@code linger} (the producer's {@code linger.ms}, as given) is above 0, parsed as Kafka parses it; a
     * value Kafka refuses counts as a linger here and is reported by the producer when it is made.
     */
    private static boolean lingers(Object linger) {
        try {
            return (Long) ConfigDef.parseType(ProducerConfig.LINGER_MS_CONFIG, linger, ConfigDef.Type.LONG) > 0;
        } catch (ConfigException e) {
            return true;
        }
    }

    /** Has the flush thread flush the producer (coalesced with a flush that has not started yet). */
    private void requestFlush() {
        flusher.execute(this::flush);
    }

    /** The flush thread's task: a failed write is the awaiting thread's to report, from its own future. */
    private void flush() {
        try {
            producer.flush();
        } catch (RuntimeException e) { // interrupted by close
            LOG.debug("group {}: dead-letter flush ended: {}", groupId, e.toString());
        }
    }

    /** Closes the producer within {@code timeout}; safe if never opened. */
    public void close(Duration closeTimeout) {
        if (producer != null) {
            try {
                // a flush still running ends with the close, which completes or fails every pending write
                producer.close(closeTimeout);
            } finally {
                flusher.shutdownNow(); // also when the close threw (an interrupted thread's does, having closed)
            }
        }
    }

    @Override
    public void close() {
        close(timeout);
    }

    private String limit() {
        return FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG + "=" + timeout.toMillis();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static Map<String, Object> producerConfig(
            Map<String, Object> consumerConfig,
            Map<String, Object> overrides,
            String clientId,
            Duration timeout,
            Duration linger) {
        Map<String, Object> config = connectionConfig(consumerConfig);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, clientId + "-dead-letters");
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.LINGER_MS_CONFIG, (int) linger.toMillis());
        // a send that waits for metadata (a missing topic) blocks the poll thread: at most the unit's deadline
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout.toMillis());
        config.putAll(overrides);
        return config;
    }

    /** The consumer's settings that say how to reach the cluster (bootstrap, DNS, security), for another client. */
    public static Map<String, Object> connectionConfig(Map<String, Object> consumerConfig) {
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
        return config;
    }
}
