package dev.fencing.kafka;

/**
 * A topic the consumer needs does not exist: a subscribed topic or its dead-letter topic. Thrown by {@link
 * FencedConsumer#run()} before it joins the group, so nothing waits for a topic that will not come (Kafka
 * would otherwise block each dead-letter write for {@code max.block.ms}).
 */
public final class MissingTopicException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final String topic;

    public MissingTopicException(String topic, String why, String bootstrapServers) {
        super("topic " + topic + " does not exist, and " + why + ". Create it before starting the consumer, for"
                + " example: kafka-topics.sh --bootstrap-server " + bootstrapServers + " --create --topic " + topic
                + " (or Admin.createTopics(List.of(new NewTopic(\"" + topic + "\", partitions, replication))))");
        this.topic = topic;
    }

    /** The missing topic. */
    public String topic() {
        return topic;
    }
}
