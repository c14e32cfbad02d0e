package com.example.shop;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.spring.FenceToken;
import dev.fencing.spring.FencedLocked;
import org.jdbi.v3.core.Jdbi;
import org.springframework.stereotype.Service;

/** Reserves stock under the SKU's lock, with the grant's token. */
@Service
public class Reservations {
    private final FencedWriter writer;
    private final FencedTable inventory;

    public Reservations(FencedWriter writer, Jdbi jdbi) {
        this.writer = writer;
        this.inventory = FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
    }

    @FencedLocked("/locks/inventory/#{#sku}")
    public WriteOutcome reserve(String sku, int qty, @FenceToken long token) {
        return reserveUnder(sku, qty, token);
    }

    /** The fenced write itself, for a token the caller got elsewhere. */
    public WriteOutcome reserveUnder(String sku, int qty, long token) {
        FencedUpdate reserve = FencedUpdate.builder(inventory)
                .key(sku)
                .setExpression("stock", "stock - :qty")
                .where("stock >= :qty")
                .bind("qty", qty)
                .build();
        return writer.tryUpdate(reserve, token);
    }
}
