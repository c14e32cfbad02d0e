package com.example.reservations;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.spring.FenceToken;
import dev.fencing.spring.FencedLocked;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Reserves stock: each SKU under its own lock, every write carrying the lock grant's fence token. */
@Service
public class Reservations {
    private static final Logger LOG = LoggerFactory.getLogger(Reservations.class);

    private final FencedWriter writer;
    private final Jdbi jdbi;
    private final FencedTable inventory;

    public Reservations(FencedWriter writer, Jdbi jdbi) {
        this.writer = writer;
        this.jdbi = jdbi;
        this.inventory =
                FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
    }

    @FencedLocked("/locks/inventory/#{#sku}")
    public WriteOutcome reserve(String sku, int qty, @FenceToken long token) {
        WriteOutcome outcome = writer.tryUpdate(reservation(sku, qty), token);
        LOG.info("reserve {} x{} under token {}: {}", sku, qty, token, outcome);
        return outcome;
    }

    @FencedLocked("/locks/inventory/#{#sku}")
    @Transactional
    public void order(String orderId, String sku, int qty, @FenceToken long token) {
        writer.update(reservation(sku, qty), token);
        jdbi.useHandle(h -> h.execute("INSERT INTO orders (id, sku, qty) VALUES (?, ?, ?)", orderId, sku, qty));
    }

    /** For comparison only: the same reservation as a plain UPDATE, under the same lock but without the fence. */
    @FencedLocked("/locks/inventory/#{#sku}")
    public int reserveUnfenced(String sku, int qty) {
        int rows = jdbi.withHandle(
                h -> h.execute("UPDATE inventory SET stock = stock - ? WHERE sku = ? AND stock >= ?", qty, sku, qty));
        LOG.info("reserve {} x{} without the fence: {} row(s) updated", sku, qty, rows);
        return rows;
    }

    private FencedUpdate reservation(String sku, int qty) {
        return FencedUpdate.builder(inventory)
                .key(sku)
                .setExpression("stock", "stock - :qty")
                .where("stock >= :qty")
                .bind("qty", qty)
                .build();
    }
}
