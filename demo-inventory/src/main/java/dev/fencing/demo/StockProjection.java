package dev.fencing.demo;

import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.StaleRecordPolicy;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;

/**
 * The downstream service: builds each SKU's stock from the reservation events in Kafka (the last event's
 * {@code stock=} value wins). In {@link Mode#FENCED} it is fencing-kafka's {@link FencedConsumer}, which drops
 * a record whose token is older than one already applied for the SKU; in {@link Mode#UNFENCED} it is a plain
 * poll loop that applies everything in the order it arrives. In both modes it counts the records it applied
 * whose token is lower than one it had already applied for the same SKU: stale records that got through.
 * The fenced consumer keeps its watermarks in PostgreSQL ({@link PostgresWatermarkStore}), so they would
 * survive a restart.
 *
 * <p>Thread-safe: records are applied on the consumer's thread, the counts and {@link #stock()} may be read
 * from any.
 */
final class StockProjection implements AutoCloseable {
    private static final String DROPPED_METER = "fencing.kafka.records.dropped";

    private final Map<String, Integer> stock = new ConcurrentHashMap<>();
    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong staleApplied = new AtomicLong();
    private final Map<String, Long> newestApplied = new ConcurrentHashMap<>();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Mode mode;
    private final String topic;
    private FencedConsumer<String, String> fenced;
    private KafkaConsumer<String, String> plain;
    private volatile boolean closing;
    private CompletableFuture<Void> loop;

    private StockProjection(Mode mode, String topic) {
        this.mode = mode;
        this.topic = topic;
    }

    /** Subscribes to {@code topic} from its beginning and applies records on a thread of its own. */
    static StockProjection start(Mode mode, String bootstrapServers, String topic, Jdbi jdbi) {
        StockProjection projection = new StockProjection(mode, topic);
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers,
                ConsumerConfig.GROUP_ID_CONFIG,
                groupOf(topic),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed");
        if (mode == Mode.FENCED) {
            projection.fenced = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                    .properties(config)
                    .topics(topic)
                    .staleRecords(StaleRecordPolicy.DROP)
                    .watermarkStore(PostgresWatermarkStore.create(jdbi))
                    .pollTimeout(Duration.ofMillis(100))
                    .meterRegistry(projection.meters)
                    .handler((record, token) -> projection.apply(record.key(), record.value(), token))
                    .build();
            projection.loop = projection.fenced.start();
        } else {
            Map<String, Object> plainConfig = new java.util.HashMap<>(config);
            plainConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, true);
            projection.plain = new KafkaConsumer<>(plainConfig, new StringDeserializer(), new StringDeserializer());
            projection.loop = CompletableFuture.runAsync(projection::pollPlain, runnable -> {
                Thread thread = new Thread(runnable, "demo-plain-consumer");
                thread.setDaemon(true);
                thread.start();
            });
        }
        return projection;
    }

    /** The consumer group of the projection of {@code topic}. */
    static String groupOf(String topic) {
        return "demo-projection-" + topic;
    }

    /** Records applied to the projection so far. */
    long applied() {
        return applied.get();
    }

    /** Records applied although their token was lower than one already applied for their SKU. */
    long staleApplied() {
        return staleApplied.get();
    }

    /** Records the fenced consumer dropped as stale so far (always 0 for the plain consumer). */
    long dropped() {
        Counter counter = meters.find(DROPPED_METER).counter();
        return counter == null ? 0 : (long) counter.count();
    }

    /** A copy of the projection: SKU to stock. */
    Map<String, Integer> stock() {
        return new TreeMap<>(stock);
    }

    /**
     * Waits until {@code published} records have been applied or dropped.
     *
     * @throws DemoException if that does not happen within {@code timeout}, or the consumer failed
     */
    void awaitCaughtUp(long published, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (applied() + dropped() < published) {
            if (loop.isCompletedExceptionally()) {
                loop.join(); // throws the consumer's failure
            }
            if (System.nanoTime() > deadline) {
                throw new DemoException("the " + mode.label() + " projection of topic " + topic + " saw "
                        + (applied() + dropped()) + " of " + published + " published records within " + timeout);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DemoException("interrupted while waiting for the projection of " + topic, e);
            }
        }
    }

    @Override
    public void close() {
        closing = true;
        if (fenced != null) {
            fenced.close();
        }
        if (plain != null) {
            plain.wakeup();
            loop.exceptionally(e -> null).join();
        }
        meters.close();
    }

    private void pollPlain() {
        try {
            plain.subscribe(List.of(topic));
            while (!closing) {
                ConsumerRecords<String, String> records = plain.poll(Duration.ofMillis(100));
                for (ConsumerRecord<String, String> record : records) {
                    // The plain consumer does not look at the token; the projection reads it only to count
                    // the stale records that got through.
                    apply(record.key(), record.value(), FenceTokenHeader.read(record.headers()));
                }
            }
        } catch (WakeupException e) {
            if (!closing) {
                throw e;
            }
        } finally {
            plain.close(Duration.ofSeconds(5));
        }
    }

    private void apply(String sku, String value, long token) {
        long newest = newestApplied.getOrDefault(sku, 0L);
        if (token < newest) {
            staleApplied.incrementAndGet();
        } else {
            newestApplied.put(sku, token);
        }
        for (String field : value.split(",")) {
            if (field.startsWith("stock=")) {
                stock.put(sku, Integer.parseInt(field.substring("stock=".length())));
            }
        }
        applied.incrementAndGet();
    }
}
