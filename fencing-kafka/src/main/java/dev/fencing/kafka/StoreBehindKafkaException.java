package dev.fencing.kafka;

import dev.fencing.kafka.spi.WatermarkStore;
import org.apache.kafka.common.TopicPartition;

/**
 * On assignment, the group's committed offset in Kafka is ahead of the offset in the {@link WatermarkStore}:
 * some consumer of the group handled records of the partition without this store (a member configured with
 * another store or none, or an earlier run before the store was introduced). The store's watermarks then miss
 * the tokens of those records, so it cannot refuse what they made stale; seeking back to the store's offset
 * would apply records again. The consumer stops rather than re-apply or skip.
 *
 * <p>What to do: give every member of the group the same store. To adopt a store deliberately for a group
 * that consumed without it, reset the group's offsets in Kafka to the store's ({@code kafka-consumer-groups.sh
 * --reset-offsets}) knowing that records before that point were fenced by nothing. A store that has no offset
 * for the partition compares as offset 0, so to adopt it at the group's current position instead (rather
 * than re-apply the whole retained log), first insert the group's committed offsets into the store: for
 * {@link PostgresWatermarkStore}, one row per partition in {@code fencing.kafka_offset (consumer_group, topic,
 * kafka_partition, next_offset)}. The watermarks of the records before that point are then unknown to the
 * store, so a late record under an older token is refused only once a newer one of its key has been applied.
 */
public final class StoreBehindKafkaException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final TopicPartition partition;

    public StoreBehindKafkaException(String groupId, TopicPartition partition, long storeOffset, long kafkaOffset) {
        super(
                "group " + groupId + " " + partition + ": Kafka's committed offset " + kafkaOffset
                        + " is ahead of the watermark store's "
                        + (storeOffset < 0 ? "(none)" : Long.toString(storeOffset))
                        + ", so a member without this store consumed records the store never saw and the store is not"
                        + " authoritative; stopping instead of re-applying or skipping them. Give every member of the group"
                        + " the same store",
                groupId + " " + partition,
                0,
                null);
        this.partition = partition;
    }

    public TopicPartition partition() {
        return partition;
    }
}
