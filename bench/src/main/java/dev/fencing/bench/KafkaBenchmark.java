package dev.fencing.bench;

import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.FencedConsumerBuilder;
import dev.fencing.kafka.InMemoryWatermarkStore;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.spi.WatermarkStore;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * {@code bench/run kafka}: the stale-dropping {@link FencedConsumer} against a plain poll loop over the same
 * topic, in alternating rounds in one JVM, each round with a fresh consumer group that reads the topic from
 * the beginning.
 *
 * <ul>
 *   <li>The topic: 1,000,000 records of about 20 bytes over 10,000 keys in 4 partitions, written once,
 *       stamped with a token that rises every 10,000 records; from the third pass over the keys on, every
 *       100th record carries token 1, below its key's watermark ({@link FencedTopic}), so about 1% are stale
 *       (the fenced consumer dead-letters them, the default policy; each round checks it refused exactly
 *       those).
 *   <li>Raw: {@code KafkaConsumer<String, String>}, poll, a trivial handler (sums value lengths), {@code
 *       commitAsync} after each poll (or every N records, matching the fenced case it is paired with).
 *   <li>Fenced, in-memory store, default settings: the same handler behind the fence check, one unit of work
 *       (store commit + {@code commitAsync}) per poll. This is the headline ratio.
 *   <li>Fenced, in-memory store, {@code fencing.commit.max.records=50000}: units spanning several polls;
 *       the raw loop commits at the same cadence.
 * </ul>
 *
 * Both sides use {@code max.poll.records=2000}. Throughput is counted from the first record handled to the
 * last (group joins excluded). The handler does almost nothing, so the ratio shows the fence's own cost per
 * record (header decode, one hash lookup, a second record object, the dead-letter writes); a handler doing
 * real work dilutes it. Prints a table, the other ratios, and ends with {@code kafka fenced/raw throughput
 * ratio: X.XX} for the in-memory store with default settings. The table gives each side's time per
 * record, and their difference is the fence's own cost per record.
 *
 * <p>{@link PostgresWatermarkStore} is measured by {@link KafkaPostgresBenchmark} ({@code bench/run
 * kafka-postgres}) against the loop a user of PostgreSQL would write by hand, with the same database effect
 * on both sides: a raw loop that writes nothing to a database is no baseline for it.
 *
 * <pre>{@code
 * bench/run kafka [--records 1000000] [--keys 10000] [--rounds 7] [--memory-commit-records 50000]
 * }</pre>
 *
 * Uses the Kafka cluster named by {@code FENCING_KAFKA_BOOTSTRAP} if set, else an in-process broker.
 */
public final class KafkaBenchmark {
    private static final int PARTITIONS = 4;
    private static final int MAX_POLL_RECORDS = 2_000;

    private final KafkaEndpoint kafka;
    private final String topic;
    private final int records;
    private final int stale;
    private final LongAdder sink = new LongAdder();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    // each round's CPU time per record of the consuming thread, for the case running now (see compare)
    private final List<Double> rawCpu = new ArrayList<>();
    private final List<Double> fencedCpu = new ArrayList<>();
    private final Map<String, double[]> cpuByCase = new HashMap<>();

    private KafkaBenchmark(KafkaEndpoint kafka, String topic, int records, int stale) {
        this.kafka = kafka;
        this.topic = topic;
        this.records = records;
        this.stale = stale;
    }

    public static void main(String[] args) throws Exception {
        int records = 1_000_000;
        int keys = 10_000;
        int rounds = 7;
        long memoryCommitRecords = 50_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--records" -> records = Integer.parseInt(args[++i]);
                case "--keys" -> keys = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--memory-commit-records" -> memoryCommitRecords = Long.parseLong(args[++i]);
                default -> {
                    System.err.println(
                            "usage: KafkaBenchmark [--records N] [--keys N] [--rounds N] [--memory-commit-records N]");
                    System.exit(2);
                }
            }
        }
        long memoryCommit = memoryCommitRecords;
        try (KafkaEndpoint kafka = KafkaServers.start()) {
            String topic = "bench-kafka-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, PARTITIONS);
            kafka.createTopic(topic + ".dlt", 1);
            long producing = System.nanoTime();
            int stale = FencedTopic.produce(kafka, topic, records, keys);
            System.err.printf(
                    Locale.ROOT,
                    "produced %,d records over %,d keys (%,d stale) in %.1f s%n",
                    records,
                    keys,
                    stale,
                    (System.nanoTime() - producing) / 1e9);
            KafkaBenchmark bench = new KafkaBenchmark(kafka, topic, records, stale);

            // JIT of both paths (client and broker) before any case counts: without it the first case's raw
            // rounds run colder than its fenced ones and the first ratio comes out too kind
            System.err.println("warming up both paths");
            for (int i = 0; i < 3; i++) {
                bench.rawRound(0);
                bench.fencedRound(new InMemoryWatermarkStore(), 0);
            }
            List<KafkaRounds.Result> results = new ArrayList<>();
            results.add(bench.compare(
                    "InMemoryWatermarkStore",
                    rounds,
                    () -> bench.rawRound(0),
                    () -> bench.fencedRound(new InMemoryWatermarkStore(), 0)));
            results.add(bench.compare(
                    "no store (consumer's own heap)",
                    rounds,
                    () -> bench.rawRound(0),
                    () -> bench.fencedRound(null, 0)));
            results.add(bench.compare(
                    "InMemoryWatermarkStore, stale dropped",
                    rounds,
                    () -> bench.rawRound(0),
                    () -> bench.fencedRound(new InMemoryWatermarkStore(), 0, StaleRecordPolicy.DROP)));
            results.add(bench.compare(
                    "InMemoryWatermarkStore, unit " + memoryCommit,
                    rounds,
                    () -> bench.rawRound(memoryCommit),
                    () -> bench.fencedRound(new InMemoryWatermarkStore(), memoryCommit)));

            System.out.printf(
                    Locale.ROOT,
                    "kafka: %,d records, %,d keys, %d partitions, %,d stale (1%%), max.poll.records %d%n",
                    records,
                    keys,
                    PARTITIONS,
                    stale,
                    MAX_POLL_RECORDS);
            KafkaRounds.printTable(System.out, results);
            bench.printCpuTable(results);
            for (int i = 1; i < results.size(); i++) {
                System.out.printf(
                        Locale.ROOT,
                        "kafka fenced/raw throughput ratio, %s: %.2f%n",
                        results.get(i).name(),
                        results.get(i).ratio());
            }
            System.out.printf(
                    Locale.ROOT,
                    "kafka fenced/raw throughput ratio: %.2f%n",
                    results.get(0).ratio());
        }
    }

    /**
     * {@link KafkaRounds#compare}, also keeping the median CPU time per record of each side's consuming thread
     * over the case's measured rounds (the warm-up pair's left out).
     */
    private KafkaRounds.Result compare(String name, int rounds, KafkaRounds.Round raw, KafkaRounds.Round fenced) {
        rawCpu.clear();
        fencedCpu.clear();
        KafkaRounds.Result result = KafkaRounds.compare(name, rounds, raw, fenced);
        cpuByCase.put(name, new double[] {
            AlternatingRuns.median(rawCpu.subList(1, rawCpu.size())),
            AlternatingRuns.median(fencedCpu.subList(1, fencedCpu.size()))
        });
        return result;
    }

    /**
     * The CPU time each side's consuming thread spent per record, from its first record to its last handled one:
     * what the fence costs that thread, which moves much less from run to run than throughput does (the broker,
     * the dead-letter producer and the garbage collector share the machine's cores with it).
     */
    private void printCpuTable(List<KafkaRounds.Result> results) {
        System.out.println("consuming thread's CPU time per record (median of the rounds; ThreadMXBean):");
        System.out.printf(
                Locale.ROOT, "| %-40s | %10s | %13s | %12s |%n", "case", "raw ns/rec", "fenced ns/rec", "added ns/rec");
        System.out.printf(
                Locale.ROOT, "|%s|%s|%s|%s|%n", "-".repeat(42), "-".repeat(12), "-".repeat(15), "-".repeat(14));
        for (KafkaRounds.Result result : results) {
            double[] cpu = cpuByCase.get(result.name());
            System.out.printf(
                    Locale.ROOT,
                    "| %-40s | %,10.0f | %,13.0f | %,12.0f |%n",
                    result.name(),
                    cpu[0],
                    cpu[1],
                    cpu[1] - cpu[0]);
        }
    }

    private Map<String, Object> consumerConfig() {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-" + UUID.randomUUID());
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_POLL_RECORDS);
        return config;
    }

    /**
     * A plain manual-commit poll loop over the whole topic; records per second. It runs on its own
     * thread and counts into a Micrometer counter once per poll, and the main thread waits for it
     * exactly as it waits for the fenced consumer, so both sides pay the same for being watched.
     */
    private double rawRound(long commitRecords) {
        Map<String, Object> config = consumerConfig();
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        io.micrometer.core.instrument.Counter seenCounter = registry.counter("bench.raw.records");
        AtomicLong first = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
                long uncommitted = 0;
                long seen = 0;
                long cpuFirst = 0;
                while (running.get()) {
                    ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> record : batch) {
                        if (first.get() == 0) {
                            first.set(System.nanoTime());
                            cpuFirst = THREADS.getCurrentThreadCpuTime();
                        }
                        sink.add(record.value().length());
                    }
                    if (seen < records && seen + batch.count() >= records) {
                        rawCpu.add((THREADS.getCurrentThreadCpuTime() - cpuFirst) / (double) records);
                    }
                    seen += batch.count();
                    seenCounter.increment(batch.count());
                    uncommitted += batch.count();
                    if (uncommitted > 0 && uncommitted >= commitRecords) {
                        consumer.commitAsync();
                        uncommitted = 0;
                    }
                }
                consumer.commitSync();
            });
            KafkaRounds.awaitCount(() -> KafkaRounds.count(registry, "bench.raw.records"), records, stopped);
            long elapsed = System.nanoTime() - first.get();
            running.set(false);
            stopped.join();
            return records / (elapsed / 1e9);
        }
    }

    /** The fenced consumer over the whole topic with a fresh group (store null: none); records per second. */
    private double fencedRound(WatermarkStore<?> store, long commitMaxRecords) {
        return fencedRound(store, commitMaxRecords, StaleRecordPolicy.DEAD_LETTER);
    }

    private double fencedRound(WatermarkStore<?> store, long commitMaxRecords, StaleRecordPolicy stalePolicy) {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        long[] handled = new long[2]; // records handled, and the thread's CPU time at the first (handler thread only)
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig())
                .topics(topic)
                .commitMaxRecords(commitMaxRecords)
                .staleRecords(stalePolicy)
                .meterRegistry(registry)
                .handler((record, token) -> {
                    if (first.get() == 0) {
                        first.set(System.nanoTime());
                        handled[1] = THREADS.getCurrentThreadCpuTime();
                    }
                    sink.add(record.value().length());
                    if (++handled[0] == records - stale) {
                        fencedCpu.add((THREADS.getCurrentThreadCpuTime() - handled[1]) / (double) records);
                    }
                });
        if (store != null) {
            builder.watermarkStore(store);
        } else {
            builder.heapOnlyWatermarksLostOnRestart();
        }
        try (FencedConsumer<String, String> consumer = builder.build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Supplier<Double> finished = () -> KafkaRounds.count(registry, "fencing.kafka.records.accepted")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dropped")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            KafkaRounds.awaitCount(finished, records, stopped);
            long elapsed = System.nanoTime() - first.get();
            double refused = KafkaRounds.count(registry, "fencing.kafka.records.dropped")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            if (refused != stale) {
                throw new IllegalStateException("fenced round refused " + refused + " records, expected " + stale);
            }
            return records / (elapsed / 1e9);
        }
    }
}
