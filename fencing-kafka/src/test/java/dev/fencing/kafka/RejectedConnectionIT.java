package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A store whose connections the driver refuses to make as configured (SQLSTATE {@code 08004}: here {@code
 * sslmode=require} against a server without SSL) stops the consumer at its first failure, as a wrong password
 * does: waiting does not change the configuration, and a consumer that retried it for {@code
 * fencing.retry.max.ms} only reported it later, RETRYING meanwhile.
 */
class RejectedConnectionIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rejected_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aConnectionTheDriverRejectsAsConfiguredStopsTheConsumerWithoutARetry() {
        // given a store whose connections require SSL, on a server that has none
        Jdbi requiringSsl = Jdbi.create(
                postgres.database.jdbcUrl() + (postgres.database.jdbcUrl().contains("?") ? "&" : "?")
                        + "sslmode=require",
                postgres.database.user(),
                postgres.database.password());
        String topic = newTopic("rejected", 1);
        String group = newGroup("rejected");
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "k", "v", 1));
            producer.flush();
        }
        Map<String, Object> config = consumerConfig(group);
        config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 10);
        config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 600_000);
        TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) -> {};

        // when
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(config)
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(requiringSsl), handler)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> stopped.isDone() || consumer.retries() > 0);

            // then
            assertThat(consumer.retries()).as("attempts run again").isZero();
            assertThat(consumer.state()).isEqualTo(ConsumerState.FAILED);
            assertThat(sqlState(consumer.failure()))
                    .as("the failure's SQLSTATE")
                    .isEqualTo("08004");
        }
    }

    private static String sqlState(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql.getSQLState();
            }
        }
        return "none in " + failure;
    }
}
