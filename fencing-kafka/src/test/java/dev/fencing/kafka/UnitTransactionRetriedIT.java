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
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE applied (value TEXT)");
            // a COMMIT that fails once with a serialization failure: a deferred constraint trigger (a sequence
            // counts its runs, as a rollback undoes no sequence)
            h.execute("CREATE TABLE applied_at_commit (value TEXT)");
            h.execute("CREATE SEQUENCE commit_checks");
            h.execute("CREATE FUNCTION fail_first_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF nextval('commit_checks') = 1 THEN RAISE EXCEPTION 'could not serialize access'"
                    + " USING ERRCODE = 'serialization_failure'; END IF; RETURN NULL; END $$");
            h.execute("CREATE CONSTRAINT TRIGGER fail_first_commit AFTER INSERT ON applied_at_commit"
                    + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_first_commit()");
        });
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
        PostgresWatermarkStore store = PostgresWatermarkStore.create(retryingJdbi());
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
        assertThat(rows("applied"))
                .as("the handlers' effects committed")
                .containsExactlyInAnyOrder("reserve 1", "reserve 2");
    }

    /**
     * The unit's work ends without failure and its COMMIT fails with a serialization failure, which the transaction
     * handler keeps to itself and runs the transaction again: the consumer must take that as the failed COMMIT it is
     * (rolled back, transient) and run the unit again, not stop.
     */
    @Test
    void aUnitWhoseCommitFailsAndTheHandlerRunsItAgainIsRunAgainByTheConsumer() {
        String topic = newTopic("commit-retried", 1);
        String group = newGroup("commit-retried");
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "reserve 1", 5);
            sendFenced(producer, topic, "sku-2", "reserve 2", 5);
        }
        PostgresWatermarkStore store = PostgresWatermarkStore.create(retryingJdbi());
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .fencePolicy(FencePolicy.STRICT)
                .commitMaxRecords(10)
                .transactionalHandler(
                        store,
                        (handle, record, token) ->
                                handle.execute("INSERT INTO applied_at_commit VALUES (?)", record.value()))
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || store.loadOffset(group, new TopicPartition(topic, 0)) == 2);
            assertThat(stopped).as("the consumer's loop").isNotDone();
        }

        assertThat(rows("applied_at_commit"))
                .as("the handlers' effects committed")
                .containsExactlyInAnyOrder("reserve 1", "reserve 2");
    }

    private static Jdbi retryingJdbi() {
        return Jdbi.create(postgres.database.jdbcUrl(), postgres.database.user(), postgres.database.password())
                .setTransactionHandler(new SerializableTransactionRunner());
    }

    private static List<String> rows(String table) {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT value FROM " + table).mapTo(String.class).list());
    }
}
