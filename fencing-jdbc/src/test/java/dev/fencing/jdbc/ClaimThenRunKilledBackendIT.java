package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue test 4: the backend running a claim-then-run transaction is killed ({@code pg_terminate_backend})
 * while a statement of it runs, after the claim and two writes: none of it is applied, the claim included.
 */
class ClaimThenRunKilledBackendIT {
    static FencingDatabase db;
    static FencedTable inventory;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("claim_it", 3);
        inventory = db.inventory();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void nothingOfTheTransactionIsAppliedWhenItsBackendIsKilledMidway() throws Exception {
        // given
        db.reset("A-1");
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        AtomicInteger backend = new AtomicInteger();
        CountDownLatch wrote = new CountDownLatch(1);
        AtomicBoolean ranPastTheKill = new AtomicBoolean();
        ExecutorService executor = Executors.newSingleThreadExecutor();

        // when
        Future<String> run = executor.submit(() -> writer.claimAndRun(inventory, RowKey.of("A-1"), 5, h -> {
            backend.set(h.createQuery("SELECT pg_backend_pid()")
                    .mapTo(Integer.class)
                    .one());
            h.execute("UPDATE inventory SET stock = stock - 3 WHERE sku = 'A-1'");
            h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 3)");
            wrote.countDown();
            h.createQuery("SELECT pg_sleep(60)::text").mapTo(String.class).one(); // the backend dies here
            ranPastTheKill.set(true);
            h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 99)");
            return "committed";
        }));
        assertThat(wrote.await(30, TimeUnit.SECONDS)).isTrue();
        await().atMost(Duration.ofSeconds(30)).until(() -> sleeping(backend.get()));
        boolean terminated = db.jdbi.withHandle(h -> h.createQuery("SELECT pg_terminate_backend(?)")
                .bind(0, backend.get())
                .mapTo(Boolean.class)
                .one());

        // then
        assertThat(terminated).isTrue();
        assertThatThrownBy(() -> run.get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .rootCause()
                .hasMessageContaining("terminat");
        executor.shutdown();
        assertThat(ranPastTheKill).isFalse();
        assertThat(db.row("A-1"))
                .as("stock and token as before the transaction")
                .isEqualTo("10:0");
        assertThat(reservations()).isZero();

        // and: the claim itself was rolled back, so under STRICT the same token can still claim the row
        String result = writer.claimAndRun(inventory, RowKey.of("A-1"), 5, h -> {
            h.execute("UPDATE inventory SET stock = stock - 3 WHERE sku = 'A-1'");
            h.execute("INSERT INTO reservation (sku, qty) VALUES ('A-1', 3)");
            return "committed";
        });
        assertThat(result).isEqualTo("committed");
        assertThat(db.row("A-1")).isEqualTo("7:5");
        assertThat(reservations()).isEqualTo(1);
    }

    private static boolean sleeping(int pid) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity"
                                + " WHERE pid = ? AND state = 'active' AND query LIKE '%pg_sleep%'")
                        .bind(0, pid)
                        .mapTo(Integer.class)
                        .one()
                == 1);
    }

    private static long reservations() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM reservation")
                .mapTo(Long.class)
                .one());
    }
}
