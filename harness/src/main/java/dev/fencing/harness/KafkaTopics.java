package dev.fencing.harness;

import dev.fencing.testsupport.KafkaEndpoint;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.KafkaException;

/**
 * What a run's coordinator asks of a Kafka cluster: whether it answers, and the topics of a run, made and
 * removed. Each call opens and closes its own admin client. Stateless and thread-safe.
 */
public final class KafkaTopics {
    private static final int TIMEOUT_SECONDS = ZooKeeperAccess.CONNECT_TIMEOUT_SECONDS;

    private KafkaTopics() {}

    /** An admin client with short timeouts; the caller closes it. */
    public static Admin admin(String bootstrap) {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, TIMEOUT_SECONDS * 1_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, TIMEOUT_SECONDS * 1_000));
    }

    /**
     * Returns when the cluster at {@code bootstrap} answers.
     *
     * @param flag the flag that named it, for the message
     * @throws HarnessException naming the flag and the address when it does not answer in time
     */
    public static void requireReachable(String bootstrap, String flag) {
        try (Admin admin = admin(bootstrap)) {
            admin.describeCluster().nodes().get(TIMEOUT_SECONDS + 5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HarnessException("interrupted while connecting to Kafka at " + bootstrap, e);
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            throw new HarnessException(
                    "cannot reach Kafka at " + bootstrap + " (" + flag + ") within " + (TIMEOUT_SECONDS + 5) + " s", e);
        }
    }

    /**
     * Creates a topic (replication factor 1) and waits until every partition has a leader in the metadata the
     * brokers answer from: {@code createTopics} returns once the controller made the topic, and a consumer
     * that lists topics just after may still be told it does not exist.
     *
     * @throws HarnessException naming the topic and the address when Kafka refuses or does not answer in time
     */
    public static void create(String bootstrap, String name, int partitions) {
        try {
            KafkaEndpoint.createTopic(bootstrap, name, partitions);
        } catch (IllegalStateException e) {
            throw new HarnessException("could not create topic " + name + " on Kafka at " + bootstrap, e);
        }
    }

    /** Deletes topics a run made; waits until Kafka confirms. */
    public static void delete(String bootstrap, List<String> names) {
        try (Admin admin = admin(bootstrap)) {
            admin.deleteTopics(names).all().get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HarnessException("interrupted while deleting topics " + names, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new HarnessException("could not delete topics " + names + " on Kafka at " + bootstrap, e);
        }
    }
}
