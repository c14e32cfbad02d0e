package com.example.inventory;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.Lease;
import org.apache.kafka.clients.producer.Producer;
import org.jdbi.v3.core.Jdbi;

/** Reserves stock: each SKU under its own lock, every write carrying the lock grant's fence token. */
public final class InventoryService {
    private final FencedLocks locks;
    private final FencedWriter writer;
    private final FencedTable inventory;
    private final Producer<String, String> producer;

    public InventoryService(FencedLocks locks, Jdbi jdbi, Producer<String, String> producer) {
        this.locks = locks;
        this.producer = producer;
        this.writer = FencedWriter.builder(jdbi).build(); // FencePolicy.STRICT: a token writes a row once
        this.inventory = FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
    }

    /** Takes the SKU's lock and reserves {@code qty} of it under the grant's token. */
    public WriteOutcome reserve(String sku, int qty) {
        try (Lease lease = locks.lock("/locks/inventory/" + sku).acquire()) {
            return reserveUnder(sku, qty, lease.token());
        }
    }

    /**
     * The write itself: PostgreSQL applies it only if no newer token has written the row, and only if the
     * stock suffices, in one statement. An applied reservation is published, stamped with the same token.
     */
    public WriteOutcome reserveUnder(String sku, int qty, long token) {
        FencedUpdate reserve = FencedUpdate.builder(inventory)
                .key(sku)
                .setExpression("stock", "stock - :qty")
                .where("stock >= :qty")
                .bind("qty", qty)
                .build();
        WriteOutcome outcome = writer.tryUpdate(reserve, token); // Applied | Rejected | NotFound | PredicateFailed
        if (outcome instanceof WriteOutcome.Applied) {
            producer.send(FencedRecords.create("inventory-events", sku, "reserved " + qty, token));
        }
        return outcome;
    }
}
