package dev.fencing.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import dev.fencing.testsupport.EmbeddedKafka;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Runs the code samples of this module's javadoc, each as written there (checked by {@link JavadocSamplesTest}),
 * against a broker of its own (the samples name fixed topics) and a fresh PostgreSQL database.
 */
class JavadocSamplesIT {
    private static EmbeddedKafka kafka;
    private static PostgresFixture postgres;
    private static String bootstrap;
    private static Jdbi database;

    @BeforeAll
    static void start() {
        kafka = EmbeddedKafka.builder().build();
        for (String topic : List.of(
                "inventory",
                "inventory.dlt",
                "reservations",
                "reservations.dlt",
                "billing",
                "billing.refused",
                "orders",
                "orders.dlt",
                "stock-moves",
                "stock-moves.dlt",
                "sku-events",
                "sku-events.dlt",
                "stock-levels",
                "stock-levels.dlt")) {
            kafka.createTopic(topic, 1);
        }
        bootstrap = kafka.bootstrapServers();
        postgres = new PostgresFixture("kafka_javadoc_it");
        database = postgres.jdbi;
        database.useHandle(h -> {
            h.execute("CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INT NOT NULL, reserved INT NOT NULL)");
            h.execute("INSERT INTO stock VALUES ('sku-42', 100, 0)");
        });
    }

    @AfterAll
    static void stop() {
        postgres.close();
        kafka.close();
    }

    /** FencedConsumer, FencedRecords and DeadLetterHeaders. */
    @Test
    void theConsumerSampleAppliesAStampedRecordAndDeadLettersAStaleOne() throws Exception {
        Jdbi jdbi = database;
        int before = reserved("sku-42");
        // the consumer runs until close(): keep it for the life of the service, not in a try-with-resources
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                        ConsumerConfig.GROUP_ID_CONFIG, "inventory-applier",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
                .topics("inventory") // "inventory" and "inventory.dlt" must exist
                .transactionalHandler(
                        PostgresWatermarkStore.create(jdbi),
                        (handle, record, token) ->
                                handle.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
                .build();
        CompletableFuture<Void> stopped = consumer.start(); // or consumer.run() on a thread of yours
        // on shutdown: consumer.close();

        long token = 5;
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true); // no reordering or duplicates on retry
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            // token: the fence token of the grant the record is written under (a dev.fencing.lock lease's token())
            producer.send(FencedRecords.create("inventory", "sku-42", "reserve 1", token));
        } // close() waits for the send
        await().atMost(Duration.ofSeconds(60)).until(() -> reserved("sku-42") == before + 1);

        send("inventory", "sku-42", "reserve 1 (late)", token - 1);
        ConsumerRecord<String, String> dlt = readFirst("inventory.dlt");
        String reason =
                new String(dlt.headers().lastHeader(DeadLetterHeaders.REASON).value(), UTF_8); // "STALE_TOKEN"
        assertThat(reason).isEqualTo("STALE_TOKEN");
        assertThat(dlt.value()).isEqualTo("reserve 1 (late)");

        consumer.close();
        stopped.get(60, TimeUnit.SECONDS);
        assertThat(reserved("sku-42")).isEqualTo(before + 1);
    }

    /** FencedConsumer's key-parallel sample. */
    @Test
    void theKeyParallelSampleAppliesAStampedRecordOnceAndDeadLettersAStaleOne() throws Exception {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "sku-applier",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        HikariConfig poolConfig = new HikariConfig();
        poolConfig.setJdbcUrl(postgres.database.jdbcUrl());
        poolConfig.setUsername(postgres.database.user());
        poolConfig.setPassword(postgres.database.password());
        poolConfig.setMaximumPoolSize(66);
        poolConfig.setMinimumIdle(2);
        int before = reserved("sku-42");
        try (HikariDataSource pool = new HikariDataSource(poolConfig)) {
            Jdbi jdbi = Jdbi.create(pool);
            FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(config)
                    .topics("sku-events")
                    .maxConcurrency(64) // records of 64 keys at once; a pool of at least 64 + 2 connections behind jdbi
                    .transactionalHandler(
                            PostgresWatermarkStore.create(jdbi),
                            (handle, record, token) -> handle.execute(
                                    "UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
                    .build();
            try (consumer) {
                consumer.start();
                send("sku-events", "sku-42", "reserve 1", 7);
                send("sku-events", "sku-42", "reserve 1 (late)", 6);
                ConsumerRecord<String, String> dlt = readFirst("sku-events.dlt");
                assertThat(dlt.value()).isEqualTo("reserve 1 (late)");
                await().atMost(Duration.ofSeconds(60)).until(() -> reserved("sku-42") == before + 1);
            }
        }
        assertThat(reserved("sku-42")).isEqualTo(before + 1);
    }

    /** package-info and RecordHandler. */
    @Test
    void thePackageSamplesProduceAndConsume() throws Exception {
        Jdbi jdbi = database;
        Map<String, String> applied = new ConcurrentHashMap<>();
        BiFunction<String, String, String> inventory = applied::put;
        try (KafkaProducer<String, String> producer = producer()) {
            reserve(producer, 3);
        }

        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        "bootstrap.servers", bootstrap, "group.id", "reservation-log", "auto.offset.reset", "earliest"))
                .topics("reservations") // "reservations" and "reservations.dlt" must exist
                .watermarkStore(PostgresWatermarkStore.create(jdbi)) // required: see FencedConsumer
                .handler((record, token) -> inventory.apply(record.key(), record.value()))
                .build();
        consumer.start(); // runs until consumer.close()

        try (consumer) {
            await().atMost(Duration.ofSeconds(60)).until(() -> applied.containsKey("sku-7"));
        }
        assertThat(applied).containsEntry("sku-7", "reserve 1");
    }

    /** package-info's producing sample. */
    private static void reserve(KafkaProducer<String, String> producer, long token) {
        producer.send(FencedRecords.create("reservations", "sku-7", "reserve 1", token));
    }

    /** FencedConsumerConfig: strict refuses a second record under the same token, into the named topic. */
    @Test
    void theConfigSampleRefusesAnEqualTokenUnderStrictIntoItsDeadLetterTopic() throws Exception {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "billing-applier",
                FencedConsumerConfig.POLICY_CONFIG, "strict",
                FencedConsumerConfig.DEAD_LETTER_TOPIC_CONFIG, "billing.refused");

        Map<String, Object> fromTheStart = new HashMap<>(config);
        fromTheStart.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        send("billing", "invoice-1", "charge", 9);
        send("billing", "invoice-1", "charge again", 9);
        Map<String, String> applied = new ConcurrentHashMap<>();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(fromTheStart)
                .topics("billing")
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> applied.put(record.value(), record.key()))
                .build()) {
            consumer.start();
            ConsumerRecord<String, String> refused = readFirst("billing.refused");
            assertThat(refused.value()).isEqualTo("charge again");
        }
        assertThat(applied).containsOnlyKeys("charge");
    }

    /** FenceTokenHeader. */
    @Test
    void theHeaderSampleEncodesDecodesAndReadsAToken() {
        ProducerRecord<String, String> record = FencedRecords.create("orders", "order-1", "placed", 42);

        byte[] value = FenceTokenHeader.encode(42L); // 00 00 00 00 00 00 00 2a
        long token = FenceTokenHeader.decode(value); // 42
        long carried = FenceTokenHeader.read(record.headers()); // -1 without the header; throws if it is unreadable

        assertThat(value).containsExactly(0, 0, 0, 0, 0, 0, 0, 0x2a);
        assertThat(token).isEqualTo(42);
        assertThat(carried).isEqualTo(42);
    }

    /** InMemoryWatermarkStore and RecordHandler. */
    @Test
    void theInMemoryStoreSampleRunsTheRecordHandlerSample() throws Exception {
        Map<String, String> applied = new ConcurrentHashMap<>();
        BiFunction<String, String, String> inventory = applied::put;
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "order-log",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");

        RecordHandler<String, String> handler = (record, token) -> inventory.apply(record.key(), record.value());
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        FencedConsumer<String, String> a = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics("orders")
                .watermarkStore(store)
                .handler(handler)
                .build();

        send("orders", "order-1", "placed", 42);
        try (a) {
            a.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> applied.containsKey("order-1"));
        }
        assertThat(applied).containsEntry("order-1", "placed");
    }

    /** PostgresWatermarkStore, WatermarkStore and TransactionalRecordHandler. */
    @Test
    void thePostgresStoreSamplesApplyTheirUpdatesInTheUnitsTransaction() throws Exception {
        DataSource dataSource = postgres.database.dataSource();
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "stock-movers",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        send("stock-moves", "sku-42", "ship 1", 2);
        int qtyBefore = database.withHandle(h -> h.createQuery("SELECT qty FROM stock WHERE sku = 'sku-42'")
                .mapTo(Integer.class)
                .one());

        Jdbi jdbi = Jdbi.create(dataSource);
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics("stock-moves")
                .transactionalHandler(
                        PostgresWatermarkStore.create(jdbi),
                        (handle, record, token) ->
                                handle.execute("UPDATE stock SET qty = qty - 1 WHERE sku = ?", record.key()))
                .build();

        try (consumer) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> jdbi.withHandle(h -> h.createQuery("SELECT qty FROM stock WHERE sku = 'sku-42'")
                                    .mapTo(Integer.class)
                                    .one())
                            == qtyBefore - 1);
        }

        WatermarkStore<Handle> store = PostgresWatermarkStore.create(jdbi);
        PartitionState state = store.load("billing", new TopicPartition("orders", 0));
        assertThat(state).isEqualTo(PartitionState.EMPTY);
        assertThat(store.load("stock-movers", new TopicPartition("stock-moves", 0))
                        .nextOffset())
                .isEqualTo(1);

        TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) ->
                handle.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key());
        int reservedBefore = reserved("sku-42");
        try (FencedConsumer<String, String> reserving = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                        ConsumerConfig.GROUP_ID_CONFIG, "stock-reservers",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
                .topics("stock-moves")
                .transactionalHandler(store, handler)
                .build()) {
            reserving.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> reserved("sku-42") == reservedBefore + 1);
        }
    }

    /** FencedRowHandler. */
    @Test
    void theFencedRowSampleSetsTheRowAndItsToken() throws Exception {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "stock-levels",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Jdbi jdbi = database;
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE stock_level (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL)");
            h.execute("INSERT INTO stock_level VALUES ('sku-7', 0)");
            h.execute("SELECT fencing.protect_table('stock_level')");
        });
        send("stock-levels", "sku-7", "12", 3);

        // CREATE TABLE stock_level (sku TEXT PRIMARY KEY, quantity BIGINT NOT NULL);
        // SELECT fencing.protect_table('stock_level');
        FencedTable stockLevel =
                FencedTable.builder().table("stock_level").keyColumns("sku").build(jdbi);
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(stockLevel)
                .columns("quantity")
                .values(record -> new Object[] {Long.parseLong(record.value())})
                .build();
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics("stock-levels")
                .fencedRowHandler(PostgresWatermarkStore.create(jdbi), rows)
                .build();

        try (consumer) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> jdbi.withHandle(h -> h.createQuery(
                                    "SELECT quantity || '@' || last_fence_token FROM stock_level WHERE sku = 'sku-7'")
                            .mapTo(String.class)
                            .one())
                    .equals("12@3"));
        }
    }

    private static int reserved(String sku) {
        return database.withHandle(h -> h.createQuery("SELECT reserved FROM stock WHERE sku = :sku")
                .bind("sku", sku)
                .mapTo(Integer.class)
                .one());
    }

    private static KafkaProducer<String, String> producer() {
        return new KafkaProducer<>(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.ACKS_CONFIG, "all"),
                new StringSerializer(),
                new StringSerializer());
    }

    private static void send(String topic, String key, String value, long token) throws Exception {
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, key, value, token)).get(30, TimeUnit.SECONDS);
        }
    }

    /** The first record of a one-partition topic, once there is one. */
    private static ConsumerRecord<String, String> readFirst(String topic) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaConsumer<String, String> reader =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            reader.assign(List.of(partition));
            reader.seekToBeginning(List.of(partition));
            AtomicReference<ConsumerRecord<String, String>> first = new AtomicReference<>();
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                reader.poll(Duration.ofMillis(100)).forEach(r -> first.compareAndSet(null, r));
                return first.get() != null;
            });
            return first.get();
        }
    }
}
