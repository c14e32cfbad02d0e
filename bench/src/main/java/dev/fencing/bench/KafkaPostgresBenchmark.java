package dev.fencing.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.FencedRowHandler;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.spi.WatermarkStore;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * {@code bench/run kafka-postgres}: what a user of {@link PostgresWatermarkStore} compares, the exactly-once
 * loop they would write by hand against {@link FencedConsumer} with the store, both applying the same
 * database effect, in alternating rounds in one JVM on one Kafka broker and one PostgreSQL server.
 *
 * <ul>
 *   <li>The topic: {@link FencedTopic}, by default 60,000 records over 10,000 keys in 4 partitions, 1% stale;
 *       each record of a key carries a newer token than the one before it, so every accepted record raises
 *       its key's watermark (the most watermark writes a topic can cause).
 *   <li>The effect: {@link BalanceTable}, one {@code UPDATE ... WHERE account = ?} by primary key per applied
 *       record, a unit's updates sent as one JDBC batch.
 *   <li>Raw: {@link HandWrittenExactlyOnceLoop}, one transaction per poll with the effect and an upsert of
 *       the partitions' next offsets; on assignment it seeks to the offsets stored in PostgreSQL. No fencing:
 *       it applies the stale records too.
 *   <li>Fenced: {@code FencedConsumer} with {@code PostgresWatermarkStore} and a transactional handler, with
 *       the default units: a unit spans polls for {@code fencing.commit.interval.ms} (1 s), which here is most
 *       or all of a round's records, so a key whose token rose several times in a unit gets one watermark row
 *       per unit. The effect, the raised watermarks and the offsets go in one transaction per unit. Stale
 *       records are dead-lettered (the default policy).
 * </ul>
 *
 * Both sides: {@code max.poll.records=2000}, {@code isolation.level=read_committed}, a fresh consumer group
 * each round, connections from one HikariCP pool, an embedded server that commits durably (or {@code
 * FENCING_POSTGRES_URL}). Each round first zeroes the table and vacuums the tables both sides write, untimed, and checks afterwards that the effect counted
 * every applied record. After the timed rounds a diagnostic pass counts the statements each side sends per
 * unit. A second case writes rows of a protected table ({@link RowTable}): the raw loop
 * sets each record's row with a plain {@code UPDATE}, the fenced consumer with a {@code FencedRowHandler}
 * (the same update with the token check in the statement, sent in rounds that name each row once, a round as
 * one fenced batch statement; the row as the key's watermark: no watermark rows). Ends with {@code kafka-postgres fenced/raw throughput ratio: X.XX} for the
 * shipped store and {@code kafka-postgres-row fenced/raw throughput ratio: X.XX} for the row case.
 *
 * <p>{@code --token-every N} (at least {@code keys}) lets a token cover N consecutive records, so a key
 * sees N / keys records per token and only the first of them raises its watermark: fewer watermark writes,
 * as when a lock holder publishes several records under one grant.
 *
 * <pre>{@code
 * bench/run kafka-postgres [--records 60000] [--keys 10000] [--rounds 3] [--token-every KEYS]
 *                          [--no-profile]
 * }</pre>
 */
public final class KafkaPostgresBenchmark {
    private static final int PARTITIONS = 4;
    private static final int MAX_POLL_RECORDS = 2_000;

    private final KafkaEndpoint kafka;
    private final String topic;
    private final int records;
    private final int stale;
    private final int keys;
    private final DataSource pool;

    private KafkaPostgresBenchmark(
            KafkaEndpoint kafka, String topic, int records, int stale, int keys, DataSource pool) {
        this.kafka = kafka;
        this.topic = topic;
        this.records = records;
        this.stale = stale;
        this.keys = keys;
        this.pool = pool;
    }

    public static void main(String[] args) throws Exception {
        int records = 60_000;
        int keys = 10_000;
        int rounds = 3;
        int tokenEvery = 0;
        boolean profile = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--records" -> records = Integer.parseInt(args[++i]);
                case "--keys" -> keys = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--token-every" -> tokenEvery = Integer.parseInt(args[++i]);
                case "--no-profile" -> profile = false;
                default -> {
                    System.err.println("usage: KafkaPostgresBenchmark [--records N] [--keys N] [--rounds N]"
                            + " [--token-every N] [--no-profile]");
                    System.exit(2);
                }
            }
        }
        try (KafkaEndpoint kafka = KafkaServers.start();
                PostgresEndpoint server = PostgresServers.start(true);
                PostgresEndpoint database = server.createDatabase("bench_kafka_pg")) {
            String topic = "bench-kafka-pg-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, PARTITIONS);
            kafka.createTopic(topic + ".dlt", 1);
            long producing = System.nanoTime();
            if (tokenEvery == 0) {
                tokenEvery = keys;
            }
            int stale = FencedTopic.produce(kafka, topic, records, keys, tokenEvery);
            System.err.printf(
                    Locale.ROOT,
                    "produced %,d records over %,d keys, token rising every %,d (%,d stale) in %.1f s%n",
                    records,
                    keys,
                    tokenEvery,
                    stale,
                    (System.nanoTime() - producing) / 1e9);
            Flyway.configure()
                    .dataSource(database.jdbcUrl(), database.user(), database.password())
                    .locations("classpath:dev/fencing/db/migration")
                    .load()
                    .migrate();
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(database.jdbcUrl());
            config.setUsername(database.user());
            config.setPassword(database.password());
            config.setMaximumPoolSize(4);
            try (HikariDataSource pool = new HikariDataSource(config)) {
                BalanceTable.create(pool, keys);
                RowTable.create(pool, keys);
                HandWrittenExactlyOnceLoop.createOffsetTable(pool);
                KafkaPostgresBenchmark bench = new KafkaPostgresBenchmark(kafka, topic, records, stale, keys, pool);
                Function<DataSource, WatermarkStore<Handle>> store =
                        ds -> PostgresWatermarkStore.create(Jdbi.create(ds));
                KafkaRounds.Result shipped = KafkaRounds.compare(
                        "PostgresWatermarkStore, 1 s units",
                        rounds,
                        () -> bench.rawRound(pool),
                        () -> bench.fencedRound(store.apply(pool)));
                KafkaRounds.Result row = KafkaRounds.compare(
                        "fenced row (FencedRowHandler), 1 s units",
                        rounds,
                        () -> bench.rowRawRound(pool),
                        () -> bench.rowFencedRound(pool));
                if (profile) {
                    System.out.println("statements per unit of work (diagnostic pass, one untimed round each):");
                    bench.profileRaw();
                    bench.profileFenced("PostgresWatermarkStore", store);
                    bench.profileRows();
                }
                System.out.printf(
                        Locale.ROOT,
                        "kafka-postgres: %,d records, %,d keys, token rising every %,d records, %d partitions,"
                                + " %,d stale (1%%), max.poll.records %d, one UPDATE per applied record in a JDBC"
                                + " batch per unit%n",
                        records,
                        keys,
                        tokenEvery,
                        PARTITIONS,
                        stale,
                        MAX_POLL_RECORDS);
                KafkaRounds.printTable(System.out, List.of(shipped, row));
                System.out.printf(Locale.ROOT, "kafka-postgres fenced/raw throughput ratio: %.2f%n", shipped.ratio());
                System.out.printf(Locale.ROOT, "kafka-postgres-row fenced/raw throughput ratio: %.2f%n", row.ratio());
            }
        }
    }

    /** One untimed raw round through a {@link StatementCounts} proxy; prints what it sent per unit. */
    private void profileRaw() {
        StatementCounts counts = new StatementCounts();
        rawRound(counts.wrap(pool));
        counts.print(System.out, "raw", records);
    }

    /** Like {@link #profileRaw()} for the fenced consumer with {@code store}. */
    private void profileFenced(String name, Function<DataSource, WatermarkStore<Handle>> store) {
        StatementCounts counts = new StatementCounts();
        fencedRound(store.apply(counts.wrap(pool)));
        counts.print(System.out, "fenced, " + name, records);
    }

    /** The row case's raw side through a {@link StatementCounts} proxy, then its fenced side. */
    private void profileRows() {
        StatementCounts raw = new StatementCounts();
        rowRawRound(raw.wrap(pool));
        raw.print(System.out, "raw, rows", records);
        StatementCounts fenced = new StatementCounts();
        rowFencedRound(fenced.wrap(pool));
        fenced.print(System.out, "fenced, FencedRowHandler", records);
    }

    /** {@link HandWrittenExactlyOnceLoop} setting {@link RowTable} rows; records per second. */
    private double rowRawRound(DataSource dataSource) {
        try {
            RowTable.reset(pool, keys);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        resetTable();
        Map<String, Object> config = consumerConfig();
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        String groupId = (String) config.get(ConsumerConfig.GROUP_ID_CONFIG);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Counter handled = registry.counter("bench.raw.records");
        AtomicLong first = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        long elapsed;
        try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
                Connection connection = dataSource.getConnection()) {
            CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
                try {
                    HandWrittenExactlyOnceLoop.run(
                            consumer,
                            groupId,
                            topic,
                            connection,
                            running,
                            () -> first.compareAndSet(0, System.nanoTime()),
                            handled::increment,
                            RowTable.Batch::new);
                } catch (SQLException e) {
                    throw new CompletionException(e);
                }
            });
            KafkaRounds.awaitCount(() -> KafkaRounds.count(registry, "bench.raw.records"), records, stopped);
            elapsed = System.nanoTime() - first.get();
            running.set(false);
            stopped.join();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        requireRowsWritten("raw rows");
        return records / (elapsed / 1e9);
    }

    /**
     * {@code FencedConsumer} with a {@link FencedRowHandler} on {@link RowTable}: each accepted record's row
     * update, fenced, a unit's updates in rounds of one statement each; no watermark rows. Records per second.
     */
    private double rowFencedRound(DataSource dataSource) {
        try {
            RowTable.reset(pool, keys);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        resetTable();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        Jdbi jdbi = Jdbi.create(dataSource);
        FencedTable table = FencedTable.builder()
                .table(RowTable.TABLE)
                .keyColumns("account")
                .build(jdbi);
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(table)
                .columns("balance")
                .values(record -> {
                    if (first.get() == 0) {
                        first.set(System.nanoTime());
                    }
                    return new Object[] {record.value().length()};
                })
                .build();
        long elapsed;
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig())
                .topics(topic)
                .meterRegistry(registry)
                .fencedRowHandler(PostgresWatermarkStore.create(jdbi), rows)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Supplier<Double> finished = () -> KafkaRounds.count(registry, "fencing.kafka.records.accepted")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dropped")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            KafkaRounds.awaitCount(finished, records, stopped);
            elapsed = System.nanoTime() - first.get();
        }
        requireRowsWritten("fenced rows");
        return records / (elapsed / 1e9);
    }

    /** Fails the run unless every key's row was written. */
    private void requireRowsWritten(String side) {
        long written;
        try {
            written = RowTable.written(pool);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        if (written != keys) {
            throw new IllegalStateException(side + " round wrote " + written + " rows, expected " + keys);
        }
    }

    private Map<String, Object> consumerConfig() {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-pg-" + UUID.randomUUID());
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_POLL_RECORDS);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        return config;
    }

    /** {@link HandWrittenExactlyOnceLoop} over the whole topic; records per second. */
    private double rawRound(DataSource dataSource) {
        resetTable();
        Map<String, Object> config = consumerConfig();
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        String groupId = (String) config.get(ConsumerConfig.GROUP_ID_CONFIG);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Counter handled = registry.counter("bench.raw.records");
        AtomicLong first = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        long elapsed;
        try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
                Connection connection = dataSource.getConnection()) {
            CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
                try {
                    // the clock starts when the first records arrive, before their transaction, as on the fenced
                    // side (whose handler starts it on the first record)
                    HandWrittenExactlyOnceLoop.run(
                            consumer,
                            groupId,
                            topic,
                            connection,
                            running,
                            () -> first.compareAndSet(0, System.nanoTime()),
                            handled::increment);
                } catch (SQLException e) {
                    throw new CompletionException(e);
                }
            });
            KafkaRounds.awaitCount(() -> KafkaRounds.count(registry, "bench.raw.records"), records, stopped);
            elapsed = System.nanoTime() - first.get();
            running.set(false);
            stopped.join();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        requireUpdates(records, "raw");
        return records / (elapsed / 1e9);
    }

    /** {@code FencedConsumer} with {@code store} over the whole topic; records per second. */
    private double fencedRound(WatermarkStore<Handle> store) {
        resetTable();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        UnitBatchingStore batching = new UnitBatchingStore(store);
        long elapsed;
        try (FencedConsumer<String, String> consumer = fencedConsumer(batching, registry, (handle, record, token) -> {
            if (first.get() == 0) {
                first.set(System.nanoTime());
            }
            batching.add(record.key(), record.value().length());
        })) {
            CompletableFuture<Void> stopped = consumer.start();
            Supplier<Double> finished = () -> KafkaRounds.count(registry, "fencing.kafka.records.accepted")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dropped")
                    + KafkaRounds.count(registry, "fencing.kafka.records.dead.lettered");
            KafkaRounds.awaitCount(finished, records, stopped);
            elapsed = System.nanoTime() - first.get();
        }
        requireUpdates(records - stale, "fenced");
        return records / (elapsed / 1e9);
    }

    /** The one place this benchmark builds a fenced consumer. */
    private FencedConsumer<String, String> fencedConsumer(
            WatermarkStore<Handle> store,
            SimpleMeterRegistry registry,
            TransactionalRecordHandler<Handle, String, String> handler) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig())
                .topics(topic)
                .meterRegistry(registry)
                .transactionalHandler(store, handler)
                .build();
    }

    /** Before each round, untimed: the effect table zeroed, and every table either side writes vacuumed. */
    private void resetTable() {
        try {
            BalanceTable.reset(pool);
            try (Connection connection = pool.getConnection();
                    Statement statement = connection.createStatement()) {
                statement.execute("VACUUM fencing.kafka_watermark, fencing.kafka_offset, bench_offset, bench_row");
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Fails the run if the effect did not count exactly the records the side applied. */
    private void requireUpdates(long expected, String side) {
        long updates;
        try {
            updates = BalanceTable.updates(pool);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        if (updates != expected) {
            throw new IllegalStateException(side + " round applied " + updates + " updates, expected " + expected);
        }
    }
}
