package dev.fencing.kafka;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Topics the consumer needs do not exist: subscribed topics or their dead-letter topics, every missing one
 * named at once. Thrown by {@link FencedConsumer#run()} before it joins the group, so nothing waits for a
 * topic that will not come (Kafka would otherwise block each dead-letter write for {@code max.block.ms}), and
 * by {@link FencedConsumer#checkTopics()}.
 */
public final class MissingTopicException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final Map<String, String> reasons;
    private final String bootstrapServers;

    /**
     * @param missing each missing topic, in the order to report them, with why the consumer needs it ("it is
     *     subscribed by group g")
     * @param bootstrapServers the cluster, for the command that creates them
     */
    public MissingTopicException(Map<String, String> missing, String bootstrapServers) {
        super(message(missing, bootstrapServers), String.join(",", missing.keySet()), 0, null);
        this.reasons = Collections.unmodifiableMap(new LinkedHashMap<>(missing));
        this.bootstrapServers = bootstrapServers;
    }

    /** One missing topic. */
    public MissingTopicException(String topic, String why, String bootstrapServers) {
        this(Map.of(topic, why), bootstrapServers);
    }

    /** The first missing topic. */
    public String topic() {
        return reasons.keySet().iterator().next();
    }

    /** Every missing topic, subscribed ones and dead-letter ones, in the order the message names them. */
    public List<String> topics() {
        return List.copyOf(reasons.keySet());
    }

    /** Each missing topic, in order, with why the consumer needs it ("it is subscribed by group g"). */
    public Map<String, String> reasons() {
        return reasons;
    }

    /** The cluster the topics are missing from, as the consumer was configured. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    private static String message(Map<String, String> missing, String bootstrapServers) {
        if (missing.isEmpty()) {
            throw new IllegalArgumentException("a MissingTopicException needs at least one missing topic");
        }
        String create = missing.keySet().stream()
                .map(topic -> "kafka-topics.sh --bootstrap-server " + bootstrapServers + " --create --topic " + topic)
                .collect(Collectors.joining("; "));
        if (missing.size() == 1) {
            Map.Entry<String, String> only = missing.entrySet().iterator().next();
            return "topic " + only.getKey() + " does not exist, and " + only.getValue() + ". Create it before"
                    + " starting the consumer, for example: " + create + " (or Admin.createTopics(List.of(new"
                    + " NewTopic(\"" + only.getKey() + "\", partitions, replication))))";
        }
        String each = missing.entrySet().stream()
                .map(e -> e.getKey() + " (" + e.getValue() + ")")
                .collect(Collectors.joining(", "));
        return missing.size() + " topics do not exist: " + each + ". Create them before starting the consumer,"
                + " for example: " + create + " (or Admin.createTopics with a NewTopic for each)";
    }
}
