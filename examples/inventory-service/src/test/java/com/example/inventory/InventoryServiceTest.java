package com.example.inventory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.FencedLocks;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The README's example service against real ZooKeeper, PostgreSQL and Kafka servers from test-support. */
class InventoryServiceTest {
    private static ZooKeeperEndpoint zk;
    private static PostgresEndpoint db;
    private static KafkaEndpoint kafka;
    private static Jdbi jdbi;
    private static Producer<String, String> producer;

    @BeforeAll
    static void startServers() {
        zk = ZooKeeperServers.start();
        db = PostgresServers.start();
        kafka = KafkaServers.start();
        kafka.createTopic(InventoryService.EVENTS_TOPIC, 2);
        kafka.createTopic(InventoryService.EVENTS_TOPIC + ".dlt", 1);

        Flyway.configure()
                .dataSource(db.dataSource())
                .locations("classpath:db/migration", "classpath:db/migration/fencing")
                .load()
                .migrate();
        jdbi = Jdbi.create(db.dataSource());
        jdbi.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('sku-42', 10)"));
        producer = new KafkaProducer<>(
                Map.of("bootstrap.servers", kafka.bootstrapServers(), "enable.idempotence", true, "acks", "all"),
                new StringSerializer(),
                new StringSerializer());
    }

    @AfterAll
    static void stopServers() {
        producer.close();
        kafka.close();
        db.close();
        zk.close();
    }

    private static CuratorFramework client() {
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(zk.connectString(), new ExponentialBackoffRetry(100, 5));
        client.start();
        return client;
    }

    @Test
    void aPausedHoldersLateReservationIsRefusedWhileTheSameUnfencedWriteGoesThrough() throws Exception {
        try (CuratorFramework clientA = client();
                CuratorFramework clientB = client();
                FencedLocks locksA = FencedLocks.builder(clientA).build();
                FencedLocks locksB = FencedLocks.builder(clientB).build()) {
            InventoryService workerA = new InventoryService(locksA, jdbi, producer);
            InventoryService workerB = new InventoryService(locksB, jdbi, producer);

            // worker A takes the lock, then stops (a GC pause) long enough for its session to expire
            Lease leaseA = locksA.lock("/locks/inventory/sku-42").acquire();
            long tokenA = leaseA.token();
            ZooKeeperSessions.expire(
                    zk.connectString(),
                    clientA.getZookeeperClient().getZooKeeper().getSessionId(),
                    clientA.getZookeeperClient().getZooKeeper().getSessionPasswd());

            // worker B gets the lock with a newer token and reserves
            assertInstanceOf(WriteOutcome.Applied.class, workerB.reserve("sku-42", 3));

            // A wakes up and writes under its old token: PostgreSQL refuses it
            WriteOutcome late = workerA.reserveUnder("sku-42", 5, tokenA);
            assertInstanceOf(WriteOutcome.Rejected.class, late);
            assertEquals(7, stock("sku-42"));

            // the same late write without the fence would have gone through
            int unfenced =
                    jdbi.withHandle(h -> h.execute("UPDATE inventory SET stock = stock - 5 WHERE sku = 'sku-42'"));
            assertEquals(1, unfenced);
            assertEquals(2, stock("sku-42"));
            assertTrue(tokenA > 0);
        }
    }

    private static int stock(String sku) {
        return jdbi.withHandle(h -> h.createQuery("SELECT stock FROM inventory WHERE sku = :sku")
                .bind("sku", sku)
                .mapTo(Integer.class)
                .one());
    }
}
