package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;

import dev.fencing.FencePolicy;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A consumer that recovered from an outage while nothing was left to commit (the database not up when it took
 * its partition, an idle topic) is running again, and its next outage starts a retry run of its own: its
 * clock does not go on from the first failure, which made the next transient failure after {@code
 * fencing.retry.max.ms} final at once, and left {@code state()} at RETRYING for good.
 */
class RecoveryBudgetIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_budget_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_offset BIGINT, value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aRecoveredConsumerIsRunningAndRetriesItsNextOutage() throws Exception {
        String topic = newTopic("budget", 1);
        String group = newGroup("budget");
        int port = URI.create(postgres.database.jdbcUrl().substring("jdbc:".length()))
                .getPort();
        AtomicBoolean cutInHandler = new AtomicBoolean();
        AtomicReference<FencedConsumer<String, String>> running = new AtomicReference<>();
        SoftAssertions soft = new SoftAssertions();
        try (CuttableProxy proxy = new CuttableProxy(port)) {
            Jdbi jdbi = Jdbi.create(
                    proxy.through(postgres.database.jdbcUrl()), postgres.database.user(), postgres.database.password());
            Map<String, Object> config = consumerConfig(group);
            config.put(FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
            config.put(FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
            config.put(FencedConsumerConfig.RETRY_MAX_MS_CONFIG, 3_000);
            TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) -> {
                if (cutInHandler.compareAndSet(false, true)) {
                    proxy.cut(); // a second, short outage: healed once the consumer retried after it
                    long before = running.get().retries();
                    new Thread(() -> {
                                Awaitility.await()
                                        .atMost(Duration.ofSeconds(30))
                                        .until(() -> running.get().retries() > before);
                                proxy.heal();
                            })
                            .start();
                }
                handle.execute("INSERT INTO applied VALUES (?, ?)", record.offset(), record.value());
            };
            proxy.cut(); // the database is not up when the consumer starts
            try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(config)
                    .fencePolicy(FencePolicy.STRICT)
                    .topics(topic)
                    .transactionalHandler(PostgresWatermarkStore.create(jdbi), handler)
                    .build()) {
                running.set(consumer);
                CompletableFuture<Void> stopped = consumer.start();
                Awaitility.await()
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> stopped.isDone() || consumer.retries() >= 2);
                proxy.heal();
                // recovered: its partition taken again, the topic idle
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        .until(() -> stopped.isDone()
                                || (consumer.assignment().size() == 1 && consumer.state() == ConsumerState.RUNNING));
                soft.assertThat(stopped)
                        .as("still running after the first outage")
                        .isNotDone();
                soft.assertThat(consumer.state())
                        .as("state after the recovery, topic idle")
                        .isEqualTo(ConsumerState.RUNNING);

                try (KafkaProducer<String, String> producer = producer()) {
                    producer.send(FencedRecords.create(topic, "k", "v-0", 1));
                    producer.flush();
                }
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> stopped.isDone() || applied() == 1);
                soft.assertThat(consumer.state())
                        .as("state after a 0.5 s outage, with retry.max.ms 3 s (failure: %s)", consumer.failure())
                        .isNotEqualTo(ConsumerState.FAILED);
                soft.assertThat(applied()).as("record applied").isEqualTo(1);
            }
        }
        soft.assertAll();
    }

    private static long applied() {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT count(*) FROM applied").mapTo(Long.class).one());
    }
}
