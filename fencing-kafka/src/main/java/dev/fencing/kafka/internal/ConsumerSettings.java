package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.StaleRecordPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What a {@code FencedConsumerBuilder} built: the consumer's settings, checked and copied, never changed
 * afterwards.
 *
 * @param kafka the Kafka consumer properties as given (without the {@code fencing.*} ones)
 * @param deadLetterProducer {@code fencing.dead.letter.producer.*} properties, without the prefix
 * @param maxConcurrency 1: the serial consumer; above: the key-parallel one with that many workers
 * @param groupMaxRecords key-parallel with a transactional handler: records per commit group (1: a transaction
 *     per record)
 * @param groupMaxTime key-parallel with a transactional handler: how long a commit group runs records
 * @param retry which failures are retried, and how
 */
public record ConsumerSettings(
        String groupId,
        String clientId,
        List<String> topics,
        Map<String, Object> kafka,
        Map<String, Object> deadLetterProducer,
        FencePolicy policy,
        StaleRecordPolicy staleRecords,
        String deadLetterTopic,
        Duration pollTimeout,
        Duration closeTimeout,
        Duration deadLetterTimeout,
        int watermarkCacheMaxKeys,
        long commitMaxRecords,
        Duration commitInterval,
        int maxConcurrency,
        int maxInFlightPerPartition,
        int groupMaxRecords,
        Duration groupMaxTime,
        RetryPolicy retry) {
    public ConsumerSettings {
        topics = List.copyOf(topics);
        kafka = Map.copyOf(kafka);
        deadLetterProducer = Map.copyOf(deadLetterProducer);
    }
}
