package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A handler's failure stops the consumer with that failure; a plain handler's unit commits up to, not
 * including, the failed record; a transactional handler's unit (exception or {@code Error}) commits nothing.
 */
class HandlerFailureIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_handler_failure_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aPlainHandlerFailureStopsTheConsumerAndCommitsUpToTheFailedRecord() throws Exception {
        String topic = KafkaFixture.newTopic("handler-failure", 1);
        String group = KafkaFixture.newGroup("handler-failure");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.sendFenced(producer, topic, "sku-1", "reserve 1", 5);
            KafkaFixture.sendFenced(producer, topic, "sku-1", "reserve 2", 5);
            KafkaFixture.sendFenced(producer, topic, "sku-2", "reserve 3", 5);
        }
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(KafkaFixture.consumerConfig(group))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {
                    if (record.key().equals("sku-2")) {
                        throw new IllegalStateException("inventory service down for " + record.key());
                    }
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();

            assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(RecordHandlingException.class)
                    .hasMessageContaining("offset 2")
                    .hasRootCauseMessage("inventory service down for sku-2");
        }
        assertThat(KafkaFixture.committed(group, topic)).isEqualTo(2);
    }

    @Test
    void aTransactionalHandlerFailureOrErrorCommitsNothingOfItsUnit() throws Exception {
        for (Throwable thrown : new Throwable[] {new IllegalStateException("down"), new AssertionError("bug")}) {
            String topic = KafkaFixture.newTopic("tx-failure", 1);
            String group = KafkaFixture.newGroup("tx-failure");
            try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
                KafkaFixture.sendFenced(producer, topic, "sku-1", "reserve 1", 5);
                KafkaFixture.sendFenced(producer, topic, "sku-2", "reserve 2", 5);
            }
            try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(KafkaFixture.consumerConfig(group))
                    .topics(topic)
                    .commitMaxRecords(10) // one unit for both records, however the polls split them
                    .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                        handle.execute("INSERT INTO applied VALUES (?)", record.value());
                        if (record.key().equals("sku-2")) {
                            sneakyThrow(thrown);
                        }
                    })
                    .build()) {
                CompletableFuture<Void> stopped = consumer.start();

                assertThatThrownBy(() -> stopped.get(60, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .cause()
                        .isInstanceOf(RecordHandlingException.class)
                        .hasCause(thrown);
            }
            assertThat(count("SELECT count(*) FROM applied")).isZero();
            assertThat(count("SELECT count(*) FROM fencing.kafka_watermark WHERE consumer_group = '" + group + "'"))
                    .isZero();
            assertThat(count("SELECT count(*) FROM fencing.kafka_offset WHERE consumer_group = '" + group + "'"))
                    .isZero();
            assertThat(KafkaFixture.committed(group, topic)).isZero();
        }
    }

    private static long count(String sql) {
        return postgres.jdbi.withHandle(
                h -> h.createQuery(sql).mapTo(Long.class).one());
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }
}
