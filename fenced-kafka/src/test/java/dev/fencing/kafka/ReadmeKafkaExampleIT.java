package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;

/**
 * The README's fenced-kafka sample, verbatim between the {@code README:begin} and {@code README:end} markers
 * (keep them in step), run against the test servers: the fresh record is applied and the stale one that
 * follows it is not.
 */
class ReadmeKafkaExampleIT {

    @Test
    void theReadmeSampleRunsAsWrittenAndRefusesTheStaleRecord() throws Exception {
        // setup the README takes for granted: a broker, a database with the migrations and a table, a producer
        String bootstrap = KafkaFixture.kafka().bootstrapServers();
        try (PostgresFixture postgres = new PostgresFixture("kafka_readme_it");
                KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            Jdbi jdbi = postgres.jdbi;
            jdbi.useHandle(h -> h.execute("CREATE TABLE stock (sku TEXT PRIMARY KEY, reserved INT NOT NULL)"));
            jdbi.useHandle(h -> h.execute("INSERT INTO stock VALUES ('sku-42', 0)"));
            long token = 8;

            // README:begin
            // the topic and its dead-letter topic must exist: the consumer checks at start and names a missing one
            try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                admin.createTopics(List.of(
                                new NewTopic("inventory", 3, (short) 1), new NewTopic("inventory.dlt", 1, (short) 1)))
                        .all()
                        .get();
            }

            // produce: the record key is the resource, the header carries the lock grant's token
            producer.send(FencedRecords.create("inventory", "sku-42", "reserve 1", token))
                    .get();

            // consume: the consumer runs until close(), so keep it for the life of the service (no
            // try-with-resources around start(): that would close it at once)
            FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(Map.of(
                            "bootstrap.servers",
                            bootstrap,
                            "group.id",
                            "inventory-applier",
                            "auto.offset.reset",
                            "earliest"))
                    .topics("inventory")
                    .transactionalHandler(
                            PostgresWatermarkStore.create(jdbi),
                            (handle, record, t) -> handle.execute(
                                    "UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
                    .build();
            CompletableFuture<Void> stopped = consumer.start(); // fails with the loop's failure, if any
            Runtime.getRuntime().addShutdownHook(new Thread(consumer::close)); // close() is safe twice
            // README:end

            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> reserved(jdbi) == 1);
                // a holder paused under token 7 publishes late: refused, dead-lettered, not applied
                producer.send(FencedRecords.create("inventory", "sku-42", "reserve 1", 7))
                        .get();
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> KafkaFixture.readAll("inventory.dlt", 1).size() == 1);
                producer.send(FencedRecords.create("inventory", "sku-42", "reserve 1", 9))
                        .get();
                await().atMost(Duration.ofSeconds(60)).until(() -> reserved(jdbi) == 2);
                assertThat(stopped).isNotDone();
            } finally {
                consumer.close();
            }
            stopped.get(30, TimeUnit.SECONDS); // completed normally: close() ended the loop
            assertThat(reserved(jdbi)).isEqualTo(2);
        }
    }

    private static int reserved(Jdbi jdbi) {
        return jdbi.withHandle(h -> h.createQuery("SELECT reserved FROM stock WHERE sku = 'sku-42'")
                .mapTo(Integer.class)
                .one());
    }
}
