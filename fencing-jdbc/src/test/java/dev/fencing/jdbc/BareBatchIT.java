package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URL;
import java.net.URLClassLoader;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.TransactionHandler;
import org.jdbi.v3.core.transaction.TransactionIsolationLevel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A batch outside a caller's transaction runs first as the bare statement, which writes every row or fails
 * and writes none; on an auto-commit connection alone, without BEGIN and COMMIT. These tests hold it to
 * that where it is easiest to get wrong: a row raised by another writer while the statement waits for its
 * lock, and a connection that does not auto-commit although Jdbi's handle is in no transaction.
 */
class BareBatchIT {
    static final long TIMEOUT_SECONDS = 30;

    static FencingDatabase db;
    static FencedTable inventory;
    static FencedWriter strict;

    ExecutorService executor;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("bare_batch_it", 4);
        inventory = db.inventory();
        strict = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.reset("A-1", "A-2");
        executor = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void stopThreads() {
        executor.shutdownNow();
    }

    /**
     * A newer holder (token 9) has written A-2 and not yet committed when the batch under token 5 reaches
     * The statement waits for the row lock, then finds A-2 at token 9 and does not write it: A-1 was
     * written by then, and the statement's failure undoes it before the report says which row was refused.
     * The same batch as a plain UPDATE waits the same way and then writes over the newer holder's stock.
     */
    @Test
    void aRowRaisedByANewerHolderWhileTheBatchWaitsForItIsReportedRejectedWhereAPlainBatchOverwritesIt()
            throws Exception {
        FencedBatch batch = FencedBatch.builder(inventory)
                .columns("stock")
                .add(5, RowKey.of("A-1"), 1)
                .add(5, RowKey.of("A-2"), 2)
                .build();

        List<WriteOutcome> outcomes = whileANewerHolderHoldsA2(() -> strict.tryBatch(batch));
        assertThat(outcomes).containsExactly(new WriteOutcome.Applied(5), new WriteOutcome.Rejected(9, 5));
        assertThat(db.row("A-1")).isEqualTo("1:5");
        assertThat(db.row("A-2")).as("the newer holder's write").isEqualTo("90:9");

        db.reset("A-1", "A-2");
        assertThatThrownBy(() -> whileANewerHolderHoldsA2(() -> {
                    strict.batch(batch);
                    return null;
                }))
                .hasCauseInstanceOf(StaleFenceException.class);
        assertThat(db.row("A-1")).as("all or nothing: A-1 not written").isEqualTo("10:0");
        assertThat(db.row("A-2")).isEqualTo("90:9");

        // the same race without the fence: the late batch lands on top of the newer holder's write
        db.reset("A-1", "A-2");
        whileANewerHolderHoldsA2(() -> db.jdbi.withHandle(
                h -> h.execute("UPDATE inventory AS t SET stock = v.stock FROM unnest(ARRAY['A-1', 'A-2'], ARRAY[1, 2])"
                        + " AS v(sku, stock) WHERE t.sku = v.sku")));
        assertThat(db.row("A-2")).isEqualTo("2:9");
    }

    /** Runs {@code write} while another transaction holds A-2 written under token 9, which commits once
     * {@code write} waits for it. */
    private <T> T whileANewerHolderHoldsA2(Callable<T> write) throws Exception {
        try (Handle holder = db.jdbi.open()) {
            holder.begin();
            holder.execute("UPDATE inventory SET stock = 90, last_fence_token = 9 WHERE sku = 'A-2'");
            Future<T> result = executor.submit(write);
            awaitAWaiterOnALock();
            holder.commit();
            return result.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    private static void awaitAWaiterOnALock() {
        await().atMost(Duration.ofSeconds(TIMEOUT_SECONDS))
                .until(() -> db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity"
                                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'")
                                .mapTo(Integer.class)
                                .one())
                        >= 1);
    }

    /**
     * A pool whose connections do not auto-commit, and a transaction handler that counts only the
     * transactions it began (as Jdbi's {@code LocalTransactionHandler.managed()} does from 3.55): outside
     * them the handle is in no transaction, yet a statement on it is not committed. The batch commits its
     * rows there too, in a transaction of its own, and a stale row still leaves none written.
     */
    @Test
    void onAConnectionThatDoesNotAutoCommitOutsideATransactionTheBatchCommitsItsRows() {
        try (HikariDataSource pool = notAutoCommitting()) {
            Jdbi jdbi = Jdbi.create(pool).setTransactionHandler(new OwnTransactionsOnly());
            FencedWriter writer = FencedWriter.builder(jdbi).build();

            List<WriteOutcome> outcomes = writer.tryBatch(FencedBatch.builder(inventory)
                    .columns("stock")
                    .add(5, RowKey.of("A-1"), 1)
                    .add(5, RowKey.of("A-2"), 2)
                    .build());

            assertThat(outcomes).containsExactly(new WriteOutcome.Applied(5), new WriteOutcome.Applied(5));
            assertThat(db.row("A-1"))
                    .as("committed, seen from another connection")
                    .isEqualTo("1:5");
            assertThat(db.row("A-2")).isEqualTo("2:5");

            assertThatThrownBy(() -> writer.batch(FencedBatch.builder(inventory)
                            .columns("stock")
                            .add(6, RowKey.of("A-1"), 3)
                            .add(4, RowKey.of("A-2"), 4) // stale: A-2 holds token 5
                            .build()))
                    .isInstanceOf(StaleFenceException.class);
            assertThat(db.row("A-1")).as("all or nothing").isEqualTo("1:5");
            // and the connection went back to the pool usable
            int one = jdbi.withHandle(
                    h -> h.createQuery("SELECT 1").mapTo(Integer.class).one());
            assertThat(one).isEqualTo(1);
        }
    }

    /**
     * A value that fails the same cast as the bare statement's own check, with the same text, must not be
     * taken for the bare statement's shortfall: the batch fails with the value's own error, and nothing is
     * written.
     */
    @Test
    void aValueThatFailsLikeTheBareStatementsCheckFailsAsItselfAndWritesNothing() {
        String lookalike = "fenced batch wrote 2 rows for 1 keys; rolled back";

        assertThatThrownBy(() -> strict.tryBatch(FencedBatch.builder(inventory)
                        .columns("stock")
                        .add(5, RowKey.of("A-1"), 1)
                        .add(5, RowKey.of("A-2"), lookalike)
                        .build()))
                .hasStackTraceContaining("invalid input syntax for type integer")
                .hasStackTraceContaining(lookalike)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("no longer name one row"));
        assertThat(db.row("A-1")).as("nothing written").isEqualTo("10:0");
    }

    /**
     * On the same kind of connection, the caller has written a row and not committed: the server has a
     * transaction open that the handle's transaction handler did not begin. The batch must treat it as the
     * caller's: a transaction of its own would commit the caller's work (tryBatch) or roll it back (a stale
     * batch()). Here the caller's row stays uncommitted through both, the stale batch leaves the caller's
     * transaction usable, and the caller's rollback undoes the fresh batch with its own work.
     */
    @Test
    void aTransactionTheHandlerDidNotBeginIsTheCallersAndTheBatchNeitherCommitsNorUndoesItsWork() {
        try (HikariDataSource pool = notAutoCommitting()) {
            Jdbi jdbi = Jdbi.create(pool).setTransactionHandler(new OwnTransactionsOnly());
            FencedWriter writer = FencedWriter.builder(jdbi).build();
            jdbi.useHandle(h -> {
                aCallersWriteThenAFreshBatch(writer, h);

                assertThatThrownBy(() -> writer.batch(FencedBatch.builder(inventory)
                                .columns("stock")
                                .add(6, RowKey.of("A-2"), 3)
                                .add(4, RowKey.of("A-1"), 4) // stale: A-1 holds token 5 in this transaction
                                .build()))
                        .isInstanceOf(StaleFenceException.class);
                int callersStock = h.createQuery("SELECT stock FROM inventory_plain WHERE sku = 'A-1'")
                        .mapTo(Integer.class)
                        .one();
                assertThat(callersStock)
                        .as("the caller's write, not undone by the batch")
                        .isEqualTo(77);
                assertThat(plainStock("A-1")).isEqualTo(10);
                run(() -> h.getConnection().rollback());
            });
            assertThat(plainStock("A-1")).isEqualTo(10);
            assertThat(db.row("A-1"))
                    .as("the fresh batch went with the caller's rollback")
                    .isEqualTo("10:0");
            assertThat(db.row("A-2")).isEqualTo("10:0");
        }
    }

    /**
     * On the pool's usual auto-commit connection the caller sent a plain {@code BEGIN} and wrote a row: nothing
     * in Jdbi knows of that transaction, pgjdbc does. A batch not written whole must not run its bare statement
     * there (its failure on purpose would abort the caller's transaction, and the batch's own transaction then
     * undo the caller's work), and {@code claimAndRun} must join it rather than commit it. Everything goes with
     * the caller's {@code ROLLBACK}.
     */
    @Test
    void aPlainBeginOnAnAutoCommitHandleIsTheCallersTransactionForABatchAndForClaimAndRun() throws Exception {
        db.jdbi.useHandle(h -> {
            run(() -> assertThat(h.getConnection().getAutoCommit()).isTrue());
            h.execute("UPDATE inventory SET last_fence_token = 5 WHERE sku = 'A-1'");
            h.execute("BEGIN");
            try {
                h.execute("UPDATE inventory_plain SET stock = 77 WHERE sku = 'A-1'");

                List<WriteOutcome> outcomes = strict.tryBatch(
                        h,
                        FencedBatch.builder(inventory)
                                .columns("stock")
                                .add(6, RowKey.of("A-2"), 3)
                                .add(4, RowKey.of("A-1"), 4) // stale: A-1 holds token 5
                                .build());
                assertThat(outcomes).containsExactly(new WriteOutcome.Applied(6), new WriteOutcome.Rejected(5, 4));
                // all or nothing: the stale batch undone to its savepoint, the caller's transaction still usable
                assertThatThrownBy(() -> strict.batch(FencedBatch.builder(inventory)
                                .columns("stock")
                                .add(8, RowKey.of("A-2"), 2)
                                .add(4, RowKey.of("A-1"), 4)
                                .build()))
                        .isInstanceOf(StaleFenceException.class);
                assertThat(db.row("A-2"))
                        .as("the stale batch's fresh row, undone")
                        .isEqualTo("3:6");
                strict.batch(FencedBatch.builder(inventory)
                        .columns("stock")
                        .add(8, RowKey.of("A-2"), 2)
                        .build());
                assertThat(db.row("A-2"))
                        .as("a fresh batch, in the caller's transaction")
                        .isEqualTo("2:8");
                String claimed = strict.claimAndRun(inventory, RowKey.of("A-1"), 7, inner -> inner.createQuery(
                                "SELECT stock FROM inventory_plain WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
                assertThat(claimed)
                        .as("the caller's write, seen by claimAndRun's callback")
                        .isEqualTo("77");
                // read on another thread, so on another connection: what is committed
                assertThat(executor.submit(() -> plainStock("A-1")).get())
                        .as("the caller's write, not committed")
                        .isEqualTo(10);
                assertThat(executor.submit(() -> db.row("A-2")).get())
                        .as("the batch's row, not committed")
                        .isEqualTo("10:0");
            } finally {
                h.execute("ROLLBACK");
            }
        });
        assertThat(plainStock("A-1")).isEqualTo(10);
        assertThat(db.row("A-1"))
                .as("the claim went with the caller's rollback")
                .isEqualTo("10:5");
        assertThat(db.row("A-2"))
                .as("the batch went with the caller's rollback")
                .isEqualTo("10:0");
    }

    /**
     * The same, on a connection of a pgjdbc loaded by a class loader of its own (as an application server or
     * a plugin system would): the library still finds pgjdbc's answer through the connection itself.
     */
    @Test
    void aPgjdbcFromAnotherClassLoaderStillTellsTheBatchThatTheTransactionIsTheCallers() throws Exception {
        URL jar = org.postgresql.Driver.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation();
        try (URLClassLoader isolated = new URLClassLoader(new URL[] {jar}, ClassLoader.getPlatformClassLoader())) {
            Driver driver = (Driver) isolated.loadClass("org.postgresql.Driver")
                    .getDeclaredConstructor()
                    .newInstance();
            Properties properties = new Properties();
            properties.setProperty("user", db.database.user());
            properties.setProperty("password", db.database.password());
            try (Connection connection = driver.connect(db.database.jdbcUrl(), properties)) {
                assertThat(connection.getClass().getClassLoader()).isSameAs(isolated);
                connection.setAutoCommit(false);
                Jdbi jdbi = Jdbi.create(() -> connection).setTransactionHandler(new OwnTransactionsOnly());
                try (Handle h = jdbi.open()) {
                    aCallersWriteThenAFreshBatch(FencedWriter.builder(jdbi).build(), h);
                    connection.rollback();
                }
            }
        }
        assertThat(db.row("A-1")).isEqualTo("10:0");
    }

    /**
     * The caller writes a row of its own outside any transaction of the handle's, then a fresh batch runs on
     * the same handle: it applies, and the caller's write is still not committed.
     */
    private static void aCallersWriteThenAFreshBatch(FencedWriter writer, Handle h) {
        h.execute("UPDATE inventory_plain SET stock = 77 WHERE sku = 'A-1'");
        assertThat(h.isInTransaction()).as("the handler began nothing").isFalse();
        List<WriteOutcome> outcomes = writer.tryBatch(
                h,
                FencedBatch.builder(inventory)
                        .columns("stock")
                        .add(5, RowKey.of("A-1"), 1)
                        .build());
        assertThat(outcomes).containsExactly(new WriteOutcome.Applied(5));
        assertThat(plainStock("A-1"))
                .as("the caller's write, not committed by the batch")
                .isEqualTo(10);
    }

    /** One connection that does not auto-commit. */
    private static HikariDataSource notAutoCommitting() {
        HikariConfig config = new HikariConfig();
        config.setDataSource(db.database.dataSource());
        config.setAutoCommit(false);
        config.setMaximumPoolSize(1);
        return new HikariDataSource(config);
    }

    private static int plainStock(String sku) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT stock FROM inventory_plain WHERE sku = ?")
                .bind(0, sku)
                .mapTo(Integer.class)
                .one());
    }

    /** In a transaction only between its own begin and commit or rollback; the connection never auto-commits. */
    private static final class OwnTransactionsOnly implements TransactionHandler {
        private final Set<Handle> open = ConcurrentHashMap.newKeySet();

        @Override
        public void begin(Handle handle) {
            open.add(handle);
        }

        @Override
        public void commit(Handle handle) {
            run(() -> handle.getConnection().commit());
            open.remove(handle);
        }

        @Override
        public void rollback(Handle handle) {
            run(() -> handle.getConnection().rollback());
            open.remove(handle);
        }

        @Override
        public boolean isInTransaction(Handle handle) {
            return open.contains(handle);
        }

        @Override
        public void savepoint(Handle handle, String name) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void rollbackToSavepoint(Handle handle, String name) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void releaseSavepoint(Handle handle, String name) {
            throw new UnsupportedOperationException();
        }

        @Override
        public <R, X extends Exception> R inTransaction(Handle handle, HandleCallback<R, X> callback) throws X {
            begin(handle);
            try {
                R result = callback.withHandle(handle);
                commit(handle);
                return result;
            } catch (Throwable e) {
                rollback(handle);
                throw e;
            }
        }

        @Override
        public <R, X extends Exception> R inTransaction(
                Handle handle, TransactionIsolationLevel level, HandleCallback<R, X> callback) throws X {
            return inTransaction(handle, callback);
        }
    }

    private interface SqlStep {
        void run() throws SQLException;
    }

    private static void run(SqlStep step) {
        try {
            step.run();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
