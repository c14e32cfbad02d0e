package dev.fencing.kafka.internal;

import dev.fencing.kafka.WatermarkStoreException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * The Kafka topic ids of the topics whose partitions the consumer takes, for the store's recreation check:
 * one {@code describeTopics} request per assignment, and one before each save of progress (a serial unit's, a
 * key-parallel progress commit) to compare them again, on an {@link Admin} client made from the consumer's
 * connection settings (as the dead-letter producer's), opened at the first request and closed with the
 * consumer. Poll thread only.
 */
public final class TopicIds implements AutoCloseable {
    /**
     * How long one description may take. It runs in the rebalance callback, so a {@code max.poll.interval.ms}
     * below it lets the group expel a member whose description hangs (docs/kafka.md says to keep it above), and
     * before each save, inside the serial unit's store transaction.
     */
    static final Duration DESCRIBE_TIMEOUT = Duration.ofSeconds(30);

    private final Map<String, Object> config;
    private Admin admin;

    public TopicIds(Map<String, Object> consumerConfig, String clientId) {
        this.config = DeadLetterWriter.connectionConfig(consumerConfig);
        config.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId + "-topic-ids");
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) DESCRIBE_TIMEOUT.toMillis());
    }

    /**
     * The current id of each of {@code topics} that Kafka has. A topic Kafka no longer has (deleted since the
     * group's assignment was made) is left out, as a topic without id is: there is nothing of it to read nor
     * to compare, the next rebalance gives its partitions up, and a topic created again under its name is
     * checked when its partitions are assigned. A topic just created that the broker asked does not know yet is
     * left out too: its id is recorded at a later assignment. Failing on it instead failed the whole assignment,
     * the consumer's other topics with it, again at every attempt (no poll between them lets the rebalance
     * happen) until the retry time had passed.
     *
     * @throws WatermarkStoreException if Kafka does not describe them within {@link #DESCRIBE_TIMEOUT}, naming
     *     the topics; its cause is Kafka's error (a {@code RetriableException} is retried as a transient failure)
     * @throws InterruptException if interrupted, with the interrupt flag set
     */
    public Map<String, Uuid> describe(Collection<String> topics) {
        if (admin == null) {
            admin = Admin.create(config);
        }
        try {
            Map<String, KafkaFuture<TopicDescription>> described =
                    admin.describeTopics(topics).topicNameValues();
            long deadline = System.nanoTime() + DESCRIBE_TIMEOUT.toNanos();
            Map<String, Uuid> ids = new HashMap<>();
            for (Map.Entry<String, KafkaFuture<TopicDescription>> topic : described.entrySet()) {
                try {
                    long left = Math.max(0, deadline - System.nanoTime());
                    ids.put(
                            topic.getKey(),
                            topic.getValue().get(left, TimeUnit.NANOSECONDS).topicId());
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                        throw e;
                    }
                }
            }
            return ids;
        } catch (InterruptedException e) {
            throw new InterruptException(e);
        } catch (ExecutionException e) {
            throw failed(topics, e.getCause());
        } catch (TimeoutException e) {
            throw failed(topics, new org.apache.kafka.common.errors.TimeoutException(e.getMessage(), e));
        }
    }

    private static WatermarkStoreException failed(Collection<String> topics, Throwable cause) {
        return new WatermarkStoreException(
                "could not read the Kafka topic ids of " + topics + " to check them against the store's: " + cause,
                cause);
    }

    /** Closes the admin client, if one was opened; safe twice. */
    public void close(Duration timeout) {
        if (admin != null) {
            Admin closing = admin;
            admin = null;
            closing.close(timeout);
        }
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }
}
