package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Units of work that span several polls ({@code fencing.commit.max.records}): a rebalance in the middle of
 * one rolls it back with the PostgreSQL store, so no record's effect is committed twice.
 */
class UnitOfWorkIT {
    private static final int RECORDS = 6_000;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_unit_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_partition INT, kafka_offset BIGINT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aRebalanceInTheMiddleOfAUnitRollsItBackAndNothingIsAppliedTwice() throws Exception {
        // given: a member in the middle of a long unit of work, paused inside its handler
        String topic = newTopic("unit", 2);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(FencedRecords.create(topic, "key-" + (i % 30), "v" + i, i / 30 + 1));
            }
            producer.flush();
        }
        String group = newGroup("unit");
        CountDownLatch paused = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        try (FencedConsumer<String, String> a = consumer(group, topic, store, (handle, record, token) -> {
            apply(handle, record);
            if (calls.incrementAndGet() == 50) {
                paused.countDown();
                awaitLatch(resume);
            }
        })) {
            a.start();
            assertThat(paused.await(60, TimeUnit.SECONDS)).isTrue();

            // when: a second member joins while the unit is open, then the first goes on
            try (FencedConsumer<String, String> b = consumer(group, topic, store, (handle, record, token) -> {
                apply(handle, record);
                calls.incrementAndGet();
            })) {
                b.start();
                // the group waits for the paused member to rejoin; it learns so at its next heartbeat
                await().atMost(Duration.ofSeconds(30)).until(() -> groupState(group) == GroupState.PREPARING_REBALANCE);
                resume.countDown();
                await().atMost(Duration.ofSeconds(90)).until(() -> storedTotal(group) == RECORDS);
            }
        }

        // then: the open unit's handled records were rolled back and read again; each applied once
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM applied")
                        .mapTo(String.class)
                        .list());
        assertThat(applied).hasSize(RECORDS).doesNotHaveDuplicates();
        assertThat(calls.get()).as("handler calls, counting rolled-back ones").isGreaterThan(RECORDS);
    }

    private static FencedConsumer<String, String> consumer(
            String group,
            String topic,
            PostgresWatermarkStore store,
            TransactionalRecordHandler<Handle, String, String> handler) {
        Map<String, Object> config = consumerConfig(group);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10);
        config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 100);
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .property(FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG, 1_000)
                .property(FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG, 60_000)
                .topics(topic)
                .transactionalHandler(store, handler)
                .build();
    }

    private static void apply(Handle handle, ConsumerRecord<String, String> record) {
        handle.execute("INSERT INTO applied VALUES (?, ?)", record.partition(), record.offset());
    }

    private static long storedTotal(String group) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT coalesce(sum(next_offset), 0) FROM fencing.kafka_offset WHERE consumer_group = :g")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
    }

    private static GroupState groupState(String group) {
        try (Admin admin = Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.kafka().bootstrapServers()))) {
            return admin.describeConsumerGroups(List.of(group))
                    .all()
                    .get(30, TimeUnit.SECONDS)
                    .get(group)
                    .groupState();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not resumed within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
