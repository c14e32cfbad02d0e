package com.example.shop;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.spring.CurrentLease;
import dev.fencing.spring.FencedLocked;
import org.jdbi.v3.core.Jdbi;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** A scheduled job every instance runs: the one that gets the lock audits, the others skip that tick. */
@Component
public class StockAudit {
    private final FencedWriter writer;
    private final FencedTable audit;

    public StockAudit(FencedWriter writer, Jdbi jdbi) {
        this.writer = writer;
        this.audit = FencedTable.builder().table("audit").keyColumns("name").build(jdbi);
    }

    @Scheduled(fixedDelay = 60_000)
    @FencedLocked(value = "/locks/jobs/stock-audit", skipIfLocked = true)
    public void audit() {
        FencedUpdate counted = FencedUpdate.builder(audit)
                .key("stock")
                .setExpression("runs", "runs + 1")
                .build();
        writer.update(counted, CurrentLease.token());
    }
}
