package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A second member joins while the first has records of every partition in flight: the first waits for the
 * records of the partitions it gives up and commits them before the revocation returns, so no record of a
 * revoked partition runs once the new owner runs the partition, none is handled twice, and each key's records
 * are handled in order across the two members.
 */
class KeyParallelRebalanceIT {
    private static final int KEYS = 300;
    private static final int RECORDS = 3_000;

    private static PostgresFixture postgres;
    private static HikariDataSource pool;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_rebalance_it");
        postgres.jdbi.useHandle(
                h -> h.execute("CREATE TABLE applied (topic TEXT, kafka_partition INT, kafka_offset BIGINT)"));
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.database.jdbcUrl());
        config.setUsername(postgres.database.user());
        config.setPassword(postgres.database.password());
        config.setMaximumPoolSize(12);
        pool = new HikariDataSource(config);
    }

    @AfterAll
    static void drop() {
        pool.close();
        postgres.close();
    }

    @Test
    void revokedPartitionsRecordsFinishAndCommitBeforeTheNewOwnerStartsThem() {
        midFlightJoin(null);
    }

    @Test
    void withThePostgresStoreAndATransactionalHandlerEachRecordIsAppliedOnceAcrossTheRebalance() {
        Jdbi jdbi = Jdbi.create(pool);
        String topic = midFlightJoin(jdbi);
        List<String> applied = jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM applied WHERE topic = :t")
                        .bind("t", topic)
                        .mapTo(String.class)
                        .list());
        assertThat(applied).hasSize(RECORDS).doesNotHaveDuplicates();
    }

    /** Runs the scenario with the in-memory store and a plain handler (jdbi null), or PostgreSQL; returns the topic. */
    private static String midFlightJoin(Jdbi jdbi) {
        String topic = newTopic("parallel-rebalance", 4);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(FencedRecords.create(topic, "key-" + (i % KEYS), Integer.toString(i), 1 + i / KEYS));
            }
            producer.flush();
        }
        String group = newGroup("parallel-rebalance");
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        Map<String, List<Integer>> handled = new ConcurrentHashMap<>();
        Map<Integer, Map<String, Integer>> runningOn =
                new ConcurrentHashMap<>(); // partition -> member -> its records of it running now
        List<String> overlaps = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger total = new AtomicInteger();
        Map<String, AtomicInteger> byMember = new ConcurrentHashMap<>();

        try (FencedConsumer<String, String> a =
                consumer(group, topic, store, jdbi, "a", handled, runningOn, overlaps, total, byMember)) {
            a.start();
            // when: b joins once a is well into the topic, with records of all four partitions in flight
            await().atMost(Duration.ofSeconds(60)).until(() -> total.get() >= 300);
            try (FencedConsumer<String, String> b =
                    consumer(group, topic, store, jdbi, "b", handled, runningOn, overlaps, total, byMember)) {
                b.start();
                await().atMost(Duration.ofSeconds(90)).until(() -> committed(group, topic) == RECORDS);
            }
        }

        // then: both members handled records, never the same partition at the same time, each record once and
        // each key in order
        assertThat(byMember.get("a").get()).isPositive();
        assertThat(byMember.get("b").get()).isPositive();
        assertThat(overlaps).isEmpty();
        assertThat(total.get()).isEqualTo(RECORDS);
        assertThat(handled).hasSize(KEYS);
        handled.forEach((key, values) -> {
            List<Integer> sorted = new ArrayList<>(values);
            Collections.sort(sorted);
            assertThat(values).as(key).hasSize(RECORDS / KEYS).isEqualTo(sorted);
        });
        return topic;
    }

    private static FencedConsumer<String, String> consumer(
            String group,
            String topic,
            InMemoryWatermarkStore store,
            Jdbi jdbi,
            String name,
            Map<String, List<Integer>> handled,
            Map<Integer, Map<String, Integer>> runningOn,
            List<String> overlaps,
            AtomicInteger total,
            Map<String, AtomicInteger> byMember) {
        Map<String, Object> config = consumerConfig(group);
        config.put("client.id", group + "-" + name);
        config.put("max.poll.records", 50);
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .maxConcurrency(4)
                .maxInFlightPerPartition(200)
                .topics(topic);
        RecordHandler<String, String> handler = (record, token) -> {
            Map<String, Integer> members = runningOn.computeIfAbsent(record.partition(), p -> new HashMap<>());
            synchronized (members) {
                members.merge(name, 1, Integer::sum);
                if (members.size() > 1) {
                    overlaps.add(record.partition() + "@" + record.offset() + " " + members);
                }
            }
            KeyParallelIT.sleepMicros(2_000 + ThreadLocalRandom.current().nextInt(6_000));
            handled.computeIfAbsent(record.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(Integer.parseInt(record.value()));
            total.incrementAndGet();
            byMember.computeIfAbsent(name, n -> new AtomicInteger()).incrementAndGet();
            synchronized (members) {
                members.computeIfPresent(name, (n, running) -> running == 1 ? null : running - 1);
            }
        };
        if (jdbi == null) {
            return builder.watermarkStore(store).handler(handler).build();
        }
        return builder.transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) -> {
                    handle.execute(
                            "INSERT INTO applied VALUES (?, ?, ?)",
                            record.topic(),
                            record.partition(),
                            record.offset());
                    handler.handle(record, token);
                })
                .build();
    }
}
