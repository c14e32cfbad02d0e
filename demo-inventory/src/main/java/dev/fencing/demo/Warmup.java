package dev.fencing.demo;

import dev.fencing.harness.KafkaTopics;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;

/**
 * Runs the workers' operation (lock, read, write, publish, release) from the coordinator for a few seconds
 * before the first measured run, on a scratch topic and lock path, so that the embedded servers in this JVM
 * are warm for both runs alike: otherwise the first run (unfenced) pays for the servers' JIT warm-up and
 * the throughput ratio flatters the fenced run. The tables it writes are recreated by each run. Not
 * thread-safe; called once.
 */
final class Warmup {
    private static final int THREADS = 2;

    private Warmup() {}

    /**
     * Warms up; returns what it created on the servers: its topic and the root of its lock nodes, for the
     * caller to remove from external servers.
     */
    static List<String> run(Clusters clusters, Jdbi jdbi, Duration length) {
        String tag = Long.toString(System.currentTimeMillis(), 36);
        String topic = "demo-inventory-warmup-" + tag;
        KafkaTopics.create(clusters.kafkaBootstrap(), topic, 1);
        InventoryDatabase database = new InventoryDatabase(jdbi, Mode.FENCED);
        database.prepare(THREADS, Integer.MAX_VALUE / 2);
        database.openWriter();
        CuratorFramework curator =
                CuratorFrameworkFactory.newClient(clusters.zookeeperConnect(), new ExponentialBackoffRetry(100, 5));
        curator.start();
        Map<String, Object> config = Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, clusters.kafkaBootstrap(), ProducerConfig.ACKS_CONFIG, "all");
        long deadline = System.nanoTime() + length.toNanos();
        try (FencedLocks locks = FencedLocks.builder(curator).build();
                KafkaProducer<String, String> producer =
                        new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                String sku = InventoryDatabase.sku(t);
                FencedLock lock = locks.lock("/fencing-demo/" + tag + "/warmup/" + sku);
                Thread thread = new Thread(
                        () -> {
                            while (System.nanoTime() < deadline) {
                                try (Lease lease = lock.acquire()) {
                                    int stock =
                                            database.read(sku, lease.token()).stock();
                                    database.write(sku, lease.token(), 0, 1, stock);
                                    producer.send(FencedRecords.create(
                                                    topic, sku, "stock=" + (stock - 1), lease.token()))
                                            .get(30, TimeUnit.SECONDS);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                    return;
                                } catch (ExecutionException | TimeoutException e) {
                                    throw new DemoException("warm-up could not publish to " + topic, e);
                                }
                            }
                        },
                        "demo-warmup-" + t);
                thread.start();
                threads.add(thread);
            }
            for (Thread thread : threads) {
                thread.join();
            }
            return List.of(topic, "/fencing-demo/" + tag);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted during the warm-up", e);
        } finally {
            curator.close();
        }
    }
}
