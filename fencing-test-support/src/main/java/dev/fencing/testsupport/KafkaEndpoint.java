package dev.fencing.testsupport;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** A Kafka cluster a test can connect to. Closing it stops what the tests started. */
public interface KafkaEndpoint extends AutoCloseable {

    /** The bootstrap servers, {@code host:port[,host:port...]}, for {@code bootstrap.servers}. */
    String bootstrapServers();

    /**
     * Creates a topic with replication factor 1 and waits until every partition has a leader in the
     * cluster's metadata. A producer that writes to a partition its broker has not yet opened gets a
     * retriable error for its first request while a later one may land: an idempotent producer with several
     * requests in flight then fails the first with {@code OutOfOrderSequenceException} (KAFKA-15591), which
     * made tests that produce right after creating their topic fail now and then on a loaded machine.
     *
     * @throws IllegalStateException if the cluster refuses or does not answer within 30 s
     */
    default void createTopic(String name, int partitions) {
        createTopic(bootstrapServers(), name, partitions);
    }

    /**
     * What {@link #createTopic(String, int)} does, on the cluster at {@code bootstrapServers}: for code that
     * has an address rather than an endpoint (a run's coordinator pointed at an external cluster). A consumer
     * that lists topics right after {@code createTopics} returned may be answered by a broker whose metadata
     * does not have the topic yet; once this returns, every partition has a leader in the metadata brokers
     * answer from.
     *
     * @throws IllegalStateException if the cluster refuses or does not answer within 30 s
     */
    static void createTopic(String bootstrapServers, String name, int partitions) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1, got " + partitions);
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!everyPartitionLed(admin, name, partitions)) {
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("partitions of " + name + " have no leader after 30 s");
                }
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topic " + name, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not create topic " + name + " on " + bootstrapServers, e);
        }
    }

    private static boolean everyPartitionLed(Admin admin, String name, int partitions)
            throws InterruptedException, ExecutionException, TimeoutException {
        TopicDescription description;
        try {
            description = admin.describeTopics(List.of(name))
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(name);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return false; // created, not yet in the metadata the broker answers from
            }
            throw e;
        }
        return description.partitions().size() == partitions
                && description.partitions().stream()
                        .allMatch(p -> p.leader() != null && !p.leader().isEmpty());
    }

    /** Stops the broker if the tests started it; an external cluster is left alone. */
    @Override
    void close();
}
