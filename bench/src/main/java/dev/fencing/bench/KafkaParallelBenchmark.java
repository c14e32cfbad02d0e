package dev.fencing.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.FencedConsumerBuilder;
import dev.fencing.kafka.InMemoryWatermarkStore;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import io.confluent.parallelconsumer.internal.AbstractParallelEoSStreamProcessor;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;

/**
 * {@code bench/run kafka-parallel}: a handler that waits 2 ms (simulated I/O, {@code Thread.sleep}) behind
 * the serial {@link FencedConsumer}, the key-parallel one at concurrency 16, 64 and 256, and Confluent's
 * Parallel Consumer ({@code parallel-consumer-core} 0.5.3.3, KEY ordering) at the same concurrencies, over
 * one topic in one JVM.
 *
 * <ul>
 *   <li>The topic: {@code --records} (100,000) records over {@code --keys} (10,000) keys in 4 partitions,
 *       written once ({@link FencedTopic}: tokens rising per pass over the keys, about 1% stale from the third
 *       pass on). The fenced consumers dead-letter the stale ones (default policy) and hand the rest to the
 *       handler; Parallel Consumer knows nothing of tokens and hands every record to the handler.
 *   <li>Fenced consumers: {@link InMemoryWatermarkStore}, a plain handler, default settings apart from {@code
 *       maxConcurrency}. Parallel Consumer: a {@code KafkaConsumer} with auto-commit off, {@code
 *       PERIODIC_CONSUMER_ASYNCHRONOUS} commits, {@code maxConcurrency} as the fenced one's.
 *   <li>The serial consumer handles one record at a time over all partitions (about 480 records/s with a 2 ms
 *       handler), so it runs over the first {@code --serial-records} (10,000) records only; every other case
 *       reads the whole topic. Throughput is records per second from the first record handled to the last
 *       one counted (group joins excluded); each case uses a fresh consumer group.
 * </ul>
 *
 * Prints a table, then {@code kafka-parallel fenced/serial throughput ratio: X.XX} (key-parallel at 64 over
 * serial) and, last, {@code kafka-parallel fenced/parallel-consumer throughput ratio: X.XX} (both at 64), or,
 * if Parallel Consumer cannot run against this build's kafka-clients, why not instead of the number.
 *
 * <pre>{@code
 * bench/run kafka-parallel [--records 100000] [--keys 10000] [--serial-records 10000] [--sleep-ms 2] [--postgres]
 *         [--group-max-records N]
 * }</pre>
 *
 * {@code --postgres} adds the serial and the key-parallel (64) consumer with {@link PostgresWatermarkStore} and a
 * transactional handler (one INSERT, then the handler time, in the record's transaction) on an embedded
 * PostgreSQL that commits durably, over the first {@code --serial-records / 2} and 30,000 records (commit groups
 * of the default size, or {@code --group-max-records}), and prints {@code kafka-parallel-postgres fenced/serial
 * throughput ratio: X.XX}; then, untimed, through counting proxies, the statements and round trips per record of
 * the key-parallel consumer over the same records with a transaction per record and with commit groups.
 */
public final class KafkaParallelBenchmark {
    private static final int PARTITIONS = 4;
    private static final int[] CONCURRENCY = {16, 64, 256};

    private final KafkaEndpoint kafka;
    private final String topic;
    private final int records;
    private final int stale;
    private final long sleepMillis;

    private KafkaParallelBenchmark(KafkaEndpoint kafka, String topic, int records, int stale, long sleepMillis) {
        this.kafka = kafka;
        this.topic = topic;
        this.records = records;
        this.stale = stale;
        this.sleepMillis = sleepMillis;
    }

    private record Result(String name, long records, double seconds) {
        double throughput() {
            return records / seconds;
        }
    }

    public static void main(String[] args) {
        int status = 0;
        try {
            run(args);
        } catch (Exception | Error e) {
            e.printStackTrace();
            status = 1;
        } finally {
            // a failed Parallel Consumer can leave non-daemon threads behind
            System.out.flush();
            System.exit(status);
        }
    }

    private static void run(String[] args) throws Exception {
        int records = 100_000;
        int keys = 10_000;
        int serialRecords = 10_000;
        long sleepMillis = 2;
        boolean postgres = false;
        int groupMaxRecords = 0; // 0: the consumer's default
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--postgres" -> postgres = true;
                case "--records" -> records = Integer.parseInt(args[++i]);
                case "--keys" -> keys = Integer.parseInt(args[++i]);
                case "--serial-records" -> serialRecords = Integer.parseInt(args[++i]);
                case "--sleep-ms" -> sleepMillis = Long.parseLong(args[++i]);
                case "--group-max-records" -> groupMaxRecords = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: KafkaParallelBenchmark [--records N] [--keys N] [--serial-records N]"
                            + " [--sleep-ms N] [--postgres] [--group-max-records N]");
                    System.exit(2);
                }
            }
        }
        try (KafkaEndpoint kafka = KafkaServers.start()) {
            String topic = "bench-parallel-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, PARTITIONS);
            kafka.createTopic(topic + ".dlt", 1);
            int stale = FencedTopic.produce(kafka, topic, records, keys);
            System.err.printf(Locale.ROOT, "produced %,d records over %,d keys (%,d stale)%n", records, keys, stale);
            KafkaParallelBenchmark bench = new KafkaParallelBenchmark(kafka, topic, records, stale, sleepMillis);

            System.err.println("warming up (key-parallel 64 and Parallel Consumer 64 over the first records)");
            bench.fenced(64, Math.min(records, 20_000));
            String peerProblem = null;
            try {
                bench.parallelConsumer(64, Math.min(records, 20_000));
            } catch (Exception | LinkageError e) {
                peerProblem = describe(e);
                System.err.println("Parallel Consumer failed: " + peerProblem);
            }

            List<Result> results = new ArrayList<>();
            results.add(bench.fenced(1, Math.min(records, serialRecords)));
            Map<Integer, Result> fenced = new HashMap<>();
            Map<Integer, Result> peer = new HashMap<>();
            for (int n : CONCURRENCY) {
                Result r = bench.fenced(n, records);
                fenced.put(n, r);
                results.add(r);
                if (peerProblem == null) {
                    try {
                        Result p = bench.parallelConsumer(n, records);
                        peer.put(n, p);
                        results.add(p);
                    } catch (Exception | LinkageError e) {
                        peerProblem = describe(e);
                        System.err.println("Parallel Consumer failed: " + peerProblem);
                    }
                }
            }

            if (postgres) {
                results.addAll(bench.transactional(
                        Math.min(records, serialRecords / 2), Math.min(records, 30_000), groupMaxRecords));
            }

            System.out.printf(
                    Locale.ROOT,
                    "kafka-parallel: %,d records, %,d keys, %d partitions, %,d stale (dead-lettered by the fenced"
                            + " consumers), handler Thread.sleep(%d ms)%n",
                    records,
                    keys,
                    PARTITIONS,
                    stale,
                    sleepMillis);
            System.out.printf(Locale.ROOT, "| %-46s | %9s | %8s | %10s |%n", "case", "records", "seconds", "records/s");
            System.out.printf(
                    Locale.ROOT, "|%s|%s|%s|%s|%n", "-".repeat(48), "-".repeat(11), "-".repeat(10), "-".repeat(12));
            for (Result r : results) {
                System.out.printf(
                        Locale.ROOT,
                        "| %-46s | %,9d | %8.2f | %,10.0f |%n",
                        r.name(),
                        r.records(),
                        r.seconds(),
                        r.throughput());
            }
            System.out.println("Parallel Consumer 0.5.3.3 is built against kafka-clients 3.x and does not run against "
                    + org.apache.kafka.common.utils.internals.AppInfoParser.getVersion()
                    + " as it is: kafka-clients 4.x"
                    + " moved org.apache.kafka.common.utils.CloseableIterator and ByteBufferInputStream to"
                    + " org.apache.kafka.common.utils.internals, and it fails with NoClassDefFoundError (its control"
                    + " loop at its first turn, its broker-poll thread at its first offset commit). This bench puts"
                    + " copies of the two at their old names (bench/src/main/java/org/apache/kafka/common/utils),"
                    + " with which it runs; nothing else it references is missing.");
            if (peerProblem != null) {
                System.out.println("Parallel Consumer did not run against kafka-clients "
                        + org.apache.kafka.common.utils.internals.AppInfoParser.getVersion() + ": " + peerProblem);
            }
            Result serial = results.get(0);
            if (postgres) {
                Result serialTx = results.get(results.size() - 2);
                Result parallelTx = results.get(results.size() - 1);
                System.out.printf(
                        Locale.ROOT,
                        "kafka-parallel fenced/serial throughput ratio, PostgreSQL transactional handler,"
                                + " concurrency 64: %.2f%n",
                        parallelTx.throughput() / serialTx.throughput());
                System.out.printf(
                        Locale.ROOT,
                        "kafka-parallel-postgres fenced/serial throughput ratio: %.2f%n",
                        parallelTx.throughput() / serialTx.throughput());
            }
            for (int n : CONCURRENCY) {
                System.out.printf(
                        Locale.ROOT,
                        "kafka-parallel fenced/serial throughput ratio, concurrency %d: %.2f%n",
                        n,
                        fenced.get(n).throughput() / serial.throughput());
                if (peer.containsKey(n)) {
                    System.out.printf(
                            Locale.ROOT,
                            "kafka-parallel fenced/parallel-consumer throughput ratio, concurrency %d: %.2f%n",
                            n,
                            fenced.get(n).throughput() / peer.get(n).throughput());
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "kafka-parallel fenced/serial throughput ratio: %.2f%n",
                    fenced.get(64).throughput() / serial.throughput());
            if (peer.containsKey(64)) {
                System.out.printf(
                        Locale.ROOT,
                        "kafka-parallel fenced/parallel-consumer throughput ratio: %.2f%n",
                        fenced.get(64).throughput() / peer.get(64).throughput());
            } else {
                System.out.println("kafka-parallel fenced/parallel-consumer throughput ratio: n/a (Parallel Consumer"
                        + " did not run: " + peerProblem + ")");
            }
        }
    }

    private static String describe(Throwable e) {
        StringBuilder text = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (text.length() > 0) {
                text.append(" <- caused by ");
            }
            text.append(t);
            if (t.getCause() == null && t.getStackTrace().length > 0) {
                text.append(" at ").append(t.getStackTrace()[0]);
            }
        }
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        System.err.println(trace);
        return text.toString();
    }

    private Map<String, Object> consumerConfig() {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-" + UUID.randomUUID());
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return config;
    }

    private void work() {
        try {
            Thread.sleep(sleepMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The fenced consumer (1: serial) until {@code target} records are finished. */
    private Result fenced(int concurrency, int target) {
        String name =
                concurrency == 1 ? "FencedConsumer serial" : "FencedConsumer key-parallel, concurrency " + concurrency;
        System.err.printf(Locale.ROOT, "%s over %,d records%n", name, target);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig())
                .topics(topic)
                .maxConcurrency(concurrency)
                .meterRegistry(registry)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> {
                    first.compareAndSet(0, System.nanoTime());
                    work();
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Supplier<Double> finished = () -> KafkaRounds.count(registry, "fencing.kafka.records.accepted")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dropped")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            KafkaRounds.awaitCount(finished, target, stopped);
            long elapsed = System.nanoTime() - first.get();
            if (target == records && KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered") != stale) {
                throw new IllegalStateException(name + " refused "
                        + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered") + ", expected " + stale);
            }
            Result result = new Result(name, target, elapsed / 1e9);
            System.err.printf(Locale.ROOT, "  %,.0f records/s%n", result.throughput());
            return result;
        }
    }

    /**
     * {@code --postgres}: the serial consumer and the key-parallel one at 64, both with {@link
     * PostgresWatermarkStore} and a transactional handler that inserts one row and then waits the handler time
     * inside the transaction, on an embedded PostgreSQL that commits durably; a pool of 70 connections.
     */
    private List<Result> transactional(int serialTarget, int parallelTarget, int groupMaxRecords) {
        try (PostgresEndpoint server = PostgresServers.start(true);
                PostgresEndpoint database = server.createDatabase("bench_kafka_parallel")) {
            Flyway.configure()
                    .dataSource(database.jdbcUrl(), database.user(), database.password())
                    .locations("classpath:dev/fencing/db/migration")
                    .load()
                    .migrate();
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(database.jdbcUrl());
            config.setUsername(database.user());
            config.setPassword(database.password());
            config.setMaximumPoolSize(70);
            try (HikariDataSource pool = new HikariDataSource(config)) {
                Jdbi jdbi = Jdbi.create(pool);
                jdbi.useHandle(h -> h.execute("CREATE TABLE effect (record_key TEXT, kafka_offset BIGINT)"));
                List<Result> results = new ArrayList<>();
                results.add(transactional(jdbi, 1, serialTarget, groupMaxRecords));
                results.add(transactional(jdbi, 64, parallelTarget, groupMaxRecords));
                // untimed: what each record sends to the server, through counting proxies, with a transaction
                // per record (groups of 1) and with commit groups, over the same records
                int counted = parallelTarget;
                for (int group : new int[] {1, groupMaxRecords}) {
                    StatementCounts counts = new StatementCounts();
                    transactional(Jdbi.create(counts.wrap(pool)), 64, counted, group);
                    counts.printPerRecord(
                            System.out,
                            "key-parallel 64, PostgreSQL transactional, "
                                    + (group == 1
                                            ? "a transaction per record"
                                            : "commit groups" + (group > 0 ? " of up to " + group : " (default size)")),
                            counted);
                }
                return results;
            }
        }
    }

    private Result transactional(Jdbi jdbi, int concurrency, int target, int groupMaxRecords) {
        String name = (concurrency == 1 ? "serial" : "key-parallel " + concurrency) + ", PostgreSQL transactional";
        System.err.printf(Locale.ROOT, "%s over %,d records%n", name, target);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig())
                .topics(topic)
                .maxConcurrency(concurrency)
                .meterRegistry(registry)
                .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) -> {
                    first.compareAndSet(0, System.nanoTime());
                    handle.execute("INSERT INTO effect VALUES (?, ?)", record.key(), record.offset());
                    work();
                });
        if (groupMaxRecords > 0) {
            builder.groupMaxRecords(groupMaxRecords);
        }
        try (FencedConsumer<String, String> consumer = builder.build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Supplier<Double> finished = () -> KafkaRounds.count(registry, "fencing.kafka.records.accepted")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            KafkaRounds.awaitCount(finished, target, stopped);
            Result result = new Result(name, target, (System.nanoTime() - first.get()) / 1e9);
            System.err.printf(Locale.ROOT, "  %,.0f records/s%n", result.throughput());
            return result;
        }
    }

    /** Confluent's Parallel Consumer, KEY ordering, until {@code target} records are handled. */
    private Result parallelConsumer(int concurrency, int target) {
        String name = "Parallel Consumer 0.5.3.3 KEY, concurrency " + concurrency;
        System.err.printf(Locale.ROOT, "%s over %,d records%n", name, target);
        Map<String, Object> config = consumerConfig();
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
        AtomicLong first = new AtomicLong();
        AtomicLong handled = new AtomicLong();
        ParallelStreamProcessor<String, String> processor =
                ParallelStreamProcessor.createEosStreamProcessor(ParallelConsumerOptions.<String, String>builder()
                        .consumer(consumer)
                        .ordering(ParallelConsumerOptions.ProcessingOrder.KEY)
                        .commitMode(ParallelConsumerOptions.CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                        .maxConcurrency(concurrency)
                        .build());
        try {
            processor.subscribe(List.of(topic));
            processor.poll(context -> {
                first.compareAndSet(0, System.nanoTime());
                work();
                handled.addAndGet(context.streamConsumerRecords().count());
            });
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (handled.get() < target) {
                if (processor.isClosedOrFailed()) {
                    Exception failure = processor instanceof AbstractParallelEoSStreamProcessor<?, ?> p
                            ? p.getFailureCause()
                            : null;
                    throw new IllegalStateException(
                            "Parallel Consumer stopped at " + handled.get() + " of " + target
                                    + (failure == null ? "" : ": " + failure),
                            failure);
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "Parallel Consumer timed out at " + handled.get() + " of " + target);
                }
                Thread.sleep(1);
            }
            long elapsed = System.nanoTime() - first.get();
            Result result = new Result(name, target, elapsed / 1e9);
            System.err.printf(Locale.ROOT, "  %,.0f records/s%n", result.throughput());
            return result;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } finally {
            try {
                processor.closeDontDrainFirst();
            } catch (Exception e) { // its close rethrows the failure of its control thread, checked or not
                System.err.println("Parallel Consumer close: " + e);
            }
        }
    }
}
