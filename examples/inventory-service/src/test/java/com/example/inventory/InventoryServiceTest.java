package com.example.inventory;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.ZooKeeper;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The README's example service against real ZooKeeper, PostgreSQL and Kafka servers from the toolkit's
 * fencing-test-support module (a test-scope dependency): worker A takes the SKU's lock and freezes until its
 * ZooKeeper session expires; worker B takes the lock over and reserves; A wakes up and writes and
 * publishes under its old token. PostgreSQL refuses A's write, the fenced consumer refuses A's event, and
 * the same write without the fence goes through.
 */
class InventoryServiceTest {
    private static ZooKeeperEndpoint zk;
    private static PostgresEndpoint db;
    private static KafkaEndpoint kafka;
    private static Jdbi jdbi;
    private static Producer<String, String> producer;

    @BeforeAll
    static void startServers() throws Exception {
        zk = ZooKeeperServers.start();
        db = PostgresServers.start();
        kafka = KafkaServers.start();
        InventoryApplication.createTopics(kafka.bootstrapServers());
        jdbi = InventoryApplication.database(db.dataSource());
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

    @Test
    void aFrozenHoldersLateWriteAndLateEventAreRefusedWhileTheSameWriteUnfencedGoesThrough() throws Exception {
        try (CuratorFramework clientA = InventoryApplication.zookeeper(zk.connectString());
                CuratorFramework clientB = InventoryApplication.zookeeper(zk.connectString());
                FencedLocks locksA = InventoryApplication.locks(clientA);
                FencedLocks locksB = InventoryApplication.locks(clientB);
                FencedConsumer<String, String> log =
                        InventoryApplication.reservationLog(kafka.bootstrapServers(), jdbi)) {
            InventoryService workerA = new InventoryService(locksA, jdbi, producer);
            InventoryService workerB = new InventoryService(locksB, jdbi, producer);

            // A takes the lock, then stops (a GC pause) until ZooKeeper expires its session
            Lease leaseA = locksA.lock("/locks/inventory/sku-42").acquire();
            long tokenA = leaseA.token();
            expireSessionOf(clientA);

            // B gets the lock with a newer token, reserves 3 and publishes the event
            assertInstanceOf(WriteOutcome.Applied.class, workerB.reserve("sku-42", 3));

            // A wakes up: its write under the old token is refused by PostgreSQL ...
            assertInstanceOf(WriteOutcome.Rejected.class, workerA.reserveUnder("sku-42", 5, tokenA));
            assertEquals(7, stock());
            // ... and the event it was about to publish is refused by the fenced consumer (dead-lettered)
            producer.send(FencedRecords.create("inventory-events", "sku-42", "reserved 5", tokenA))
                    .get();
            assertEquals(List.of("reserved 5"), deadLetters(1));
            assertEquals(List.of("reserved 3"), loggedEvents());
            // and A learns it lost the lock (the listener logged it); it closes the lease and stops
            await().atMost(Duration.ofSeconds(30)).until(() -> !leaseA.isValid());
            leaseA.close();

            // the same late write without the fence would have gone through
            int unfenced =
                    jdbi.withHandle(h -> h.execute("UPDATE inventory SET stock = stock - 5 WHERE sku = 'sku-42'"));
            assertEquals(1, unfenced);
            assertEquals(2, stock());
        }
    }

    private static void expireSessionOf(CuratorFramework client) throws Exception {
        ZooKeeper zooKeeper = client.getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), zooKeeper.getSessionId(), zooKeeper.getSessionPasswd());
    }

    /** The first {@code n} values on the dead-letter topic, read as any Kafka client would. */
    private static List<String> deadLetters(int n) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                Map.of("bootstrap.servers", kafka.bootstrapServers(), "group.id", "dead-letter-reader",
                        "auto.offset.reset", "earliest"),
                new StringDeserializer(),
                new StringDeserializer())) {
            consumer.subscribe(List.of("inventory-events.dlt"));
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                return values.size() >= n;
            });
        }
        return values;
    }

    private static int stock() {
        return jdbi.withHandle(h -> h.createQuery("SELECT stock FROM inventory WHERE sku = 'sku-42'")
                .mapTo(Integer.class)
                .one());
    }

    private static List<String> loggedEvents() {
        return jdbi.withHandle(h -> h.createQuery("SELECT event FROM reservation_log ORDER BY id")
                .mapTo(String.class)
                .list());
    }
}
