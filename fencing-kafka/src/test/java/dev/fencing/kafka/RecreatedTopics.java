package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;

/**
 * What the tests of a topic deleted and created again under a consumer share: a migrated database whose {@code
 * applied} table holds each record a handler applied, consumers whose handler can be held at one record, the
 * group's stored progress, and the topic's deletion.
 */
final class RecreatedTopics implements AutoCloseable {
    final PostgresFixture postgres;

    RecreatedTopics(String prefix) {
        postgres = new PostgresFixture(prefix);
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (topic TEXT, kafka_offset BIGINT, value TEXT)"));
    }

    /**
     * A consumer of {@code topics} with a {@link PostgresWatermarkStore} whose transactional handler applies each
     * record; at the record {@code heldValue} it first counts down {@code holding} and waits for {@code release}.
     */
    FencedConsumerBuilder<String, String> heldConsumer(
            String group, List<String> topics, String heldValue, CountDownLatch holding, CountDownLatch release) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topics.toArray(String[]::new))
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    if (record.value().equals(heldValue)) {
                        holding.countDown();
                        try {
                            if (!release.await(60, TimeUnit.SECONDS)) {
                                throw new AssertionError("not released");
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new AssertionError(e);
                        }
                    }
                    apply(handle, record, token);
                });
    }

    /** The effect of a record: its row in {@code applied}. */
    static void apply(Handle handle, ConsumerRecord<String, String> record, long token) {
        handle.createUpdate("INSERT INTO applied (topic, kafka_offset, value) VALUES (:t, :o, :v)")
                .bind("t", record.topic())
                .bind("o", record.offset())
                .bind("v", record.value())
                .execute();
    }

    /** The values applied from {@code topic}, in order. */
    List<String> values(String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT value FROM applied WHERE topic = :t ORDER BY value")
                .bind("t", topic)
                .mapTo(String.class)
                .list());
    }

    /** The offset the store holds for partition 0 of {@code topic}, or -1. */
    long storedOffset(String group, String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT next_offset FROM fencing.kafka_offset"
                        + " WHERE consumer_group = :g AND topic = :t AND kafka_partition = 0")
                .bind("g", group)
                .bind("t", topic)
                .mapTo(Long.class)
                .findOne()
                .orElse(-1L));
    }

    /** Deletes the group's rows for {@code topic} from the store, as {@link TopicRecreatedException} says to. */
    void deleteRows(String group, String topic) {
        postgres.jdbi.useHandle(h -> {
            for (String table : List.of("kafka_offset", "kafka_watermark", "kafka_topic")) {
                h.execute("DELETE FROM fencing." + table + " WHERE consumer_group = ? AND topic = ?", group, topic);
            }
        });
    }

    /** Deletes the topic, waits until the cluster no longer lists it, and creates it again, empty. */
    static void recreateEmpty(String topic) throws Exception {
        deleteTopic(topic);
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> {
            kafka().createTopic(topic, 1);
            return true;
        });
    }

    /** Deletes the topic and waits until the cluster no longer lists it. */
    static void deleteTopic(String topic) throws Exception {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(60)).until(() -> !admin.listTopics()
                    .names()
                    .get(30, TimeUnit.SECONDS)
                    .contains(topic));
        }
    }

    @Override
    public void close() {
        postgres.close();
    }
}
