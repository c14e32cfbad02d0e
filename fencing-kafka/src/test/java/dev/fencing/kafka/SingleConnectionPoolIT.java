package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A consumer whose {@link PostgresWatermarkStore} sits on a pool with one connection: each unit holds that
 * connection for its transaction, and the watermarks it loads lazily during the unit are read through the same
 * one (Jdbi hands a nested call on the unit's thread the unit's handle). Were they read through a second
 * connection, the first unit would wait for the pool until its timeout and the consumer would stop with a
 * {@link WatermarkStoreException}, as N consumers sharing a pool of N would.
 */
class SingleConnectionPoolIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_pool_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aUnitLoadsItsWatermarksThroughItsOwnConnectionSoOneConnectionIsEnough() {
        String topic = newTopic("pool", 1);
        String group = newGroup("pool");
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.database.jdbcUrl());
        config.setUsername(postgres.database.user());
        config.setPassword(postgres.database.password());
        config.setMaximumPoolSize(1);
        config.setConnectionTimeout(1_000);
        try (HikariDataSource pool = new HikariDataSource(config);
                KafkaProducer<String, String> producer = producer()) {
            PostgresWatermarkStore store = PostgresWatermarkStore.create(Jdbi.create(pool));

            // when: a record is applied, and after a restart a late record of the same key arrives
            sendFenced(producer, topic, "sku-1", "fresh", 5);
            runUntilStored(store, group, topic, 1);
            sendFenced(producer, topic, "sku-1", "late", 3);
            runUntilStored(store, group, topic, 2);
        }

        // then: the fresh record applied once, the late one refused by the watermark loaded after the restart
        List<String> applied = postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT value FROM applied").mapTo(String.class).list());
        assertThat(applied).containsExactly("fresh");
        assertThat(readAll(topic + FencedConsumerConfig.DEAD_LETTER_SUFFIX, 1))
                .extracting(ConsumerRecord::value)
                .containsExactly("late");
    }

    private static void runUntilStored(PostgresWatermarkStore store, String group, String topic, long offset) {
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .transactionalHandler(
                        store,
                        (handle, record, token) -> handle.execute("INSERT INTO applied VALUES (?)", record.value()))
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || store.loadOffset(group, new TopicPartition(topic, 0)) == offset);
            assertThat(stopped).as("the consumer's loop").isNotCompletedExceptionally();
        }
    }
}
