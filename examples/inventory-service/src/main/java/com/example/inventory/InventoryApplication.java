package com.example.inventory;

import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** How the service wires the toolkit: ZooKeeper locks, PostgreSQL with the toolkit's migrations, Kafka. */
public final class InventoryApplication {
    private static final Logger LOG = LoggerFactory.getLogger(InventoryApplication.class);

    private InventoryApplication() {}

    /** A started Curator client. */
    public static CuratorFramework zookeeper(String zkConnect) {
        CuratorFramework client = CuratorFrameworkFactory.newClient(zkConnect, new ExponentialBackoffRetry(100, 5));
        client.start();
        return client;
    }

    /** Fenced locks on {@code client}, whose listener logs a lost lease. */
    public static FencedLocks locks(CuratorFramework client) {
        FencedLocks locks = FencedLocks.builder(client)
                .listener(new FencedLockListener() {
                    @Override
                    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                        // the resource refuses what this holder sends from now on; stop sending it
                        LOG.warn("lost {} (token {}): {}", lease.path(), lease.token(), cause);
                    }
                })
                .build();
        return locks;
    }

    /** The service's tables and the toolkit's, in one Flyway history; a Jdbi on the same database. */
    public static Jdbi database(DataSource ds) {
        Flyway.configure()
                .dataSource(ds)
                .locations("classpath:db/migration", "classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        return Jdbi.create(ds);
    }

    /** The events topic and its dead-letter topic; the fenced consumer refuses to start without them. */
    public static void createTopics(String bootstrap) throws InterruptedException, ExecutionException {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(
                            new NewTopic("inventory-events", 3, (short) 1),
                            new NewTopic("inventory-events.dlt", 1, (short) 1)))
                    .all()
                    .get();
        }
    }

    /**
     * Applies the reservation events to {@code reservation_log}: a record is applied only if its token is at
     * least the newest one applied for its SKU, and its row, the SKU's watermark and the consumed offset
     * commit in one PostgreSQL transaction. Runs until {@link FencedConsumer#close()}.
     */
    public static FencedConsumer<String, String> reservationLog(String bootstrap, Jdbi jdbi) {
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        "bootstrap.servers", bootstrap,
                        "group.id", "reservation-log",
                        "auto.offset.reset", "earliest"))
                .topics("inventory-events")
                .transactionalHandler(
                        PostgresWatermarkStore.create(jdbi),
                        (handle, record, token) -> handle.execute(
                                "INSERT INTO reservation_log (sku, token, event) VALUES (?, ?, ?)",
                                record.key(),
                                token,
                                record.value()))
                .build();
        consumer.start(); // the returned future fails with the loop's failure, if any
        return consumer;
    }
}
