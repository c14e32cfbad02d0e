package dev.fencing.testsupport;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/** A Kafka cluster a test can connect to. Closing it stops what the tests started. */
public interface KafkaEndpoint extends AutoCloseable {

    /** The bootstrap servers, {@code host:port[,host:port...]}, for {@code bootstrap.servers}. */
    String bootstrapServers();

    /**
     * Creates a topic with replication factor 1 and waits until it exists.
     *
     * @throws IllegalStateException if the cluster refuses or does not answer within 30 s
     */
    default void createTopic(String name, int partitions) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1, got " + partitions);
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topic " + name, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not create topic " + name + " on " + bootstrapServers(), e);
        }
    }

    /** Stops the broker if the tests started it; an external cluster is left alone. */
    @Override
    void close();
}
