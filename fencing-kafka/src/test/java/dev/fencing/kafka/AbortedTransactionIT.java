package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Defect 5: a record of an aborted producer transaction is neither applied nor allowed to raise its key's
 * watermark (which would then refuse the holder's real records), while a read_uncommitted loop sees it.
 */
class AbortedTransactionIT {

    @Test
    void aRecordOfAnAbortedTransactionIsNotAppliedWhileAReadUncommittedLoopSeesIt() {
        String topic = newTopic("aborted", 1);
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "aborted-" + UUID.randomUUID());
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(FencedRecords.create(topic, "sku-1", "taken back", 9));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(FencedRecords.create(topic, "sku-1", "real", 5));
            producer.commitTransaction();
        }

        // without the fence's isolation level: a read_uncommitted loop sees the aborted record
        assertThat(readUncommittedValues(topic)).contains("taken back");

        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("aborted");
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> applied.add(record.value() + "@" + token))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> applied.size() == 1);
        }
        assertThat(applied).containsExactly("real@5");
    }

    private static List<String> readUncommittedValues(String topic) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(r -> values.add(r.value()));
                return values.contains("taken back");
            });
        }
        return values;
    }
}
