package dev.fencing.kafka;

import dev.fencing.kafka.spi.WatermarkStore;
import org.apache.kafka.common.Uuid;

/**
 * The {@link WatermarkStore} holds the group's progress for a topic under another Kafka topic id than the
 * topic has now: the topic was deleted and created again under the same name, and the store's offsets,
 * watermarks and applied offsets are of the old topic. Reading on from the stored offset would skip the new
 * log's first records (neither handled nor dead-lettered) and judge the others by the old topic's tokens and
 * applied offsets. The consumer stops when it takes a partition of the topic, before it seeks or handles
 * anything, and is not retried. It also stops before it saves progress of a topic whose id is no longer the one
 * the topic had when the consumer took its partitions (the topic created again while the consumer did not fetch
 * it, which Kafka's consumer does not notice); then the stored id is that one, and the serial consumer's unit is
 * rolled back first.
 *
 * <p>What to do: with every member of the group stopped, delete the group's rows for the topic from the store
 * (for {@link PostgresWatermarkStore}, from {@code fencing.kafka_offset}, {@code fencing.kafka_watermark} and
 * {@code fencing.kafka_topic}), then start them: the new topic is read from its beginning and its id recorded.
 * The consumer sends a partition's offset to Kafka only right after the save that checked its topic's id, so Kafka
 * holds no offset of the old log for the new topic, unless the topic was created again in the moment between such
 * a check and its commit (or an earlier version, or another tool, committed one): a start then stops with {@link
 * StoreBehindKafkaException}; reset the group's committed offsets of the topic in Kafka to the earliest ({@code
 * kafka-consumer-groups.sh --group G --topic T --reset-offsets --to-earliest --execute}) and start again.
 * To keep the old topic's watermarks (its keys' tokens), delete only its rows in {@code fencing.kafka_offset}
 * and {@code fencing.kafka_topic} and set {@code applied_offset = -1} on its rows in {@code
 * fencing.kafka_watermark}.
 */
public final class TopicRecreatedException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final Uuid storedId;
    private final Uuid currentId;

    public TopicRecreatedException(String groupId, String topic, Uuid storedId, Uuid currentId) {
        super(
                "group " + groupId + " topic " + topic
                        + ": the watermark store holds the group's progress for topic id "
                        + storedId + ", but the topic's id is now " + currentId
                        + ": the topic was deleted and created again under the same name, and the stored offsets and"
                        + " watermarks are of the old topic; stopping instead of reading the new topic from the old"
                        + " one's offsets. With every member of the group stopped, delete the group's rows for the"
                        + " topic from the store (fencing.kafka_offset, fencing.kafka_watermark and"
                        + " fencing.kafka_topic for PostgresWatermarkStore), then start them again (if a start then"
                        + " stops with StoreBehindKafkaException, also reset the group's committed offsets of the"
                        + " topic in Kafka to the earliest)",
                groupId + " " + topic,
                0,
                null);
        this.topic = topic;
        this.storedId = storedId;
        this.currentId = currentId;
    }

    public String topic() {
        return topic;
    }

    /** The topic id the store holds for the group's progress: the old topic's. */
    public Uuid storedId() {
        return storedId;
    }

    /** The id Kafka gives the topic now. */
    public Uuid currentId() {
        return currentId;
    }
}
