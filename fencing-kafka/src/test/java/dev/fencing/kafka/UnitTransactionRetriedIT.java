package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.SerializableTransactionRunner;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A serial consumer's unit of work [sku-1, sku-2] in a {@link PostgresWatermarkStore} whose Jdbi runs a transaction's
 * callback again after a serialization failure ({@link SerializableTransactionRunner}, as Jdbi recommends for
 * SERIALIZABLE work): sku-2's handler fails once with one. The unit's transaction must not be run a second time as if
 * it were the first (the unit's watermarks, raised by the rolled-back attempt, are the consumer's, in memory): each
 * record is applied once, with its handler's effect.
 */
class UnitTransactionRetriedIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_unit_transaction_retried_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aUnitWhoseTransactionTheHandlerRunsAgainAppliesEachRecordOnce() {
        String topic = newTopic("unit-retried", 1);
        String group = newGroup("unit-retried");
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "reserve 1", 5);
            sendFenced(producer, topic, "sku-2", "reserve 2", 5);
        }
        Jdbi jdbi = Jdbi.create(postgres.database.jdbcUrl(), postgres.database.user(), postgres.database.password())
                .setTransactionHandler(new SerializableTransactionRunner());
        PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
        AtomicBoolean failed = new AtomicBoolean();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .fencePolicy(FencePolicy.STRICT) // a token applies a key once: a second run of sku-1 is stale
                .commitMaxRecords(10) // one unit for both records, however the polls split them
                .transactionalHandler(store, (handle, record, token) -> {
                    handle.execute("INSERT INTO applied VALUES (?)", record.value());
                    if (record.key().equals("sku-2") && failed.compareAndSet(false, true)) {
                        handle.execute("DO $$ BEGIN RAISE EXCEPTION 'could not serialize access'"
                                + " USING ERRCODE = 'serialization_failure'; END $$");
                    }
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || store.loadOffset(group, new TopicPartition(topic, 0)) == 2);
            assertThat(stopped).as("the consumer's loop").isNotDone();
        }

        assertThat(failed).as("the handler's serialization failure").isTrue();
        List<String> applied = postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT value FROM applied").mapTo(String.class).list());
        assertThat(applied).as("the handlers' effects committed").containsExactlyInAnyOrder("reserve 1", "reserve 2");
    }
}
