package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The election and read/write lock samples of docs/locks.md, line for line, run against real servers (the
 * examples build checks that each sample of the README and docs/ stands in some test or in the example service).
 */
class ReadmeSamplesIT {
    private static LockAndDatabase servers;

    private final List<Long> written = new ArrayList<>();
    private ZooKeeperClients clients;
    private FencedLocks locks;
    private FencedWriter writer;
    private String hostName = "host-a";
    private boolean running = true;
    private int batches;
    private String report;
    private int newPrices = 7;
    private final PriceList priceList = () -> "prices v1";

    interface PriceList {
        String read();
    }

    @AfterEach
    void disconnect() {
        clients.close();
    }

    @BeforeAll
    static void startServers() {
        servers = LockAndDatabase.start("readme_samples_it", "ledger");
    }

    @AfterAll
    static void stopServers() {
        servers.close();
    }

    @BeforeEach
    void connect() {
        clients = new ZooKeeperClients(servers.zk.connectString());
        locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        writer = FencedWriter.builder(servers.jdbi).build();
        servers.reset("main");
    }

    @Test
    void theLeaderLoopWritesUnderItsTermTokenUntilTheTermEnds() {
        Jdbi jdbi = servers.jdbi;
        // a leader writes many times under one term token: MONOTONIC (STRICT refuses a second write under it)
        FencedWriter writer =
                FencedWriter.builder(jdbi).policy(FencePolicy.MONOTONIC).build();
        FencedLeaderElection election = locks.election("/elections/ledger-writer", hostName);
        while (running) {
            Leadership term = election.awaitLeadership(); // joins, and blocks until elected
            while (term.isValid()) {
                writer.tryUpdate(appendNextBatch(), term.token()); // refused once a newer leader has written
            }
        }
        assertThat(batches).isEqualTo(3);
        assertThat(servers.value("main")).isEqualTo(3);
    }

    /** The sample's batch: the third one closes the locks, which ends the term and the loop. */
    private FencedUpdate appendNextBatch() {
        batches++;
        if (batches == 3) {
            running = false;
            locks.close();
        }
        return FencedUpdate.builder(servers.table)
                .key("main")
                .set("value", batches)
                .build();
    }

    @Test
    void theLeadCallbackRunsUnderTheTermTokenAndSaysWhyTheTermEnded() throws Exception {
        FencedLeaderElection election = locks.election("/elections/ledger-writer-callback", hostName);
        CompletableFuture<LeaseLoss> over = election.lead(term -> runAppender(term.token()));
        assertThat(over.get(30, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.STEPPED_DOWN);
        assertThat(written).hasSize(1).allMatch(token -> token > 0);
    }

    private void runAppender(long token) {
        written.add(token);
    }

    @Test
    void readersShareAndTheWriterWritesUnderItsToken() {
        FencedReadWriteLock prices = locks.readWriteLock("/locks/price-list");
        try (Lease read = prices.readLock().acquire()) {
            report = priceList.read(); // readers share the lock
        }
        try (Lease write = prices.writeLock().acquire()) {
            writer.tryUpdate(replacePrices(newPrices), write.token()); // fenced like an exclusive lock
        }
        assertThat(report).isEqualTo("prices v1");
        assertThat(servers.value("main")).isEqualTo(7);
    }

    private FencedUpdate replacePrices(int prices) {
        return FencedUpdate.builder(servers.table)
                .key("main")
                .set("value", prices)
                .build();
    }
}
