package dev.fencing.kafka;

import static org.awaitility.Awaitility.await;

import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The shared broker of the test JVM, and plain clients to write and read topics around the code under test. */
final class KafkaFixture {
    private KafkaFixture() {}

    static KafkaEndpoint kafka() {
        return KafkaServers.shared();
    }

    /** A fresh topic and its default dead-letter topic. */
    static String newTopic(String prefix, int partitions) {
        String name = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
        kafka().createTopic(name, partitions);
        kafka().createTopic(name + FencedConsumerConfig.DEAD_LETTER_SUFFIX, 1);
        return name;
    }

    static String newGroup(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Map<String, Object> consumerConfig(String group) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return config;
    }

    static KafkaProducer<String, String> producer() {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        // one request in flight: a retried first request can then never be overtaken by a later one, which an
        // idempotent producer fails for good with OutOfOrderSequenceException (KAFKA-15591; createTopic also
        // waits for every partition's leader)
        config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }

    /** Sends and waits for the broker's acknowledgement, so records land in call order. */
    static void sendFenced(KafkaProducer<String, String> producer, String topic, String key, String value, long token) {
        try {
            producer.send(FencedRecords.create(topic, key, value, token)).get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every record of a topic from the beginning, once at least {@code atLeast} are there, in partition then offset order. */
    static List<ConsumerRecord<String, String>> readAll(String topic, int atLeast) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition()))
                    .collect(Collectors.toList());
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                return records.size() >= atLeast;
            });
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                boolean atEnd = true;
                for (TopicPartition p : partitions) {
                    atEnd &= consumer.position(p) >= ends.get(p);
                }
                if (!atEnd) {
                    consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                }
                return atEnd;
            });
        }
        records.sort(Comparator.<ConsumerRecord<String, String>>comparingInt(ConsumerRecord::partition)
                .thenComparingLong(ConsumerRecord::offset));
        return records;
    }

    /** Number of records in a topic now (sum of end offsets; the test topics are never compacted). */
    static long size(String topic) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition()))
                    .collect(Collectors.toList());
            return consumer.endOffsets(partitions).values().stream()
                    .mapToLong(Long::longValue)
                    .sum();
        }
    }

    /** The group's committed offsets in Kafka, summed over the topic's partitions. */
    static long committed(String group, String topic) {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS);
            return offsets.entrySet().stream()
                    .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
                    .mapToLong(e -> e.getValue().offset())
                    .sum();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Sets the group's committed offset in Kafka for a partition; the group must have no live member. */
    static void moveCommittedOffset(String group, TopicPartition partition, long offset) {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
            admin.alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(offset)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** Which records of {@code log} ("partition@offset") a fenced consumer applies and which it refuses. */
    record Expected(Set<String> applied, Set<String> stale) {}

    /** What a fenced consumer with the default policy makes of {@code log}, read in offset order per partition. */
    static Expected expected(List<ConsumerRecord<String, String>> log) {
        Set<String> applied = new HashSet<>();
        Set<String> stale = new HashSet<>();
        Map<String, Long> watermark = new HashMap<>();
        for (ConsumerRecord<String, String> record : log) {
            long t = token(record);
            if (t >= watermark.getOrDefault(record.key(), 0L)) {
                watermark.put(record.key(), t);
                applied.add(record.partition() + "@" + record.offset());
            } else {
                stale.add(record.partition() + "@" + record.offset());
            }
        }
        return new Expected(applied, stale);
    }

    static long token(ConsumerRecord<?, ?> record) {
        return FenceTokenHeader.read(record.headers());
    }
}
