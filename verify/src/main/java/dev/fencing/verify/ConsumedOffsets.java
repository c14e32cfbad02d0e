package dev.fencing.verify;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * How far the consumer group got: it has consumed every record when, for each partition of the topic, its
 * offset of record has reached the partition's end. The record of progress is the watermark store's offsets
 * ({@code fencing.kafka_offset}) for the fenced run, and the offsets committed to Kafka for the control run.
 * Stateless.
 */
final class ConsumedOffsets {
    private ConsumedOffsets() {}

    /**
     * Waits until the group has consumed every record of the topic: for the fenced run, the watermark store's
     * offsets (its record of progress); for the control run, the offsets committed to Kafka. Starts again any
     * base member that stops on its own meanwhile.
     */
    static boolean awaitConsumed(
            Servers servers,
            Mode mode,
            String topic,
            String group,
            ConsumerGroup consumers,
            FaultLog log,
            Duration wait)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + wait.toMillis();
        try (Admin admin = servers.admin()) {
            while (System.currentTimeMillis() < deadline) {
                consumers.watch().forEach(log::note);
                Map<TopicPartition, Long> end = endOffsets(admin, topic);
                Map<Integer, Long> consumed =
                        mode == Mode.FENCED ? storeOffsets(servers, group, topic) : kafkaOffsets(admin, group);
                boolean caughtUp = end.entrySet().stream()
                        .allMatch(e -> consumed.getOrDefault(e.getKey().partition(), 0L) >= e.getValue());
                if (caughtUp) {
                    return true;
                }
                Thread.sleep(500);
            }
        }
        return false;
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) {
        try {
            int partitions = admin.describeTopics(List.of(topic))
                    .allTopicNames()
                    .get(10, TimeUnit.SECONDS)
                    .get(topic)
                    .partitions()
                    .size();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            return admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet().stream()
                    .collect(Collectors.toMap(
                            Map.Entry::getKey, e -> e.getValue().offset()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerifyException("interrupted while reading the end offsets of " + topic, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new VerifyException("cannot read the end offsets of " + topic + ": " + e.getMessage(), e);
        }
    }

    private static Map<Integer, Long> kafkaOffsets(Admin admin, String group) {
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            Map<Integer, Long> offsets = new HashMap<>();
            committed.forEach((partition, offset) -> {
                if (offset != null) {
                    offsets.put(partition.partition(), offset.offset());
                }
            });
            return offsets;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerifyException("interrupted while reading the offsets of group " + group, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new VerifyException("cannot read the offsets of group " + group + ": " + e.getMessage(), e);
        }
    }

    private static Map<Integer, Long> storeOffsets(Servers servers, String group, String topic) {
        Map<Integer, Long> offsets = new HashMap<>();
        try (Connection connection = servers.dataSource().getConnection();
                PreparedStatement query = connection.prepareStatement("SELECT kafka_partition, next_offset"
                        + " FROM fencing.kafka_offset WHERE consumer_group = ? AND topic = ?")) {
            query.setString(1, group);
            query.setString(2, topic);
            try (ResultSet rows = query.executeQuery()) {
                while (rows.next()) {
                    offsets.put(rows.getInt(1), rows.getLong(2));
                }
            }
        } catch (SQLException e) {
            throw new VerifyException("cannot read the consumer offsets in fencing.kafka_offset: " + e.getMessage(), e);
        }
        return offsets;
    }
}
