package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.FenceTokens;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedUpsert;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.transaction.TransactionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link FencedWriter}; see its javadoc for the contract. This class checks input, picks the handle
 * (the caller's, or this thread's from Jdbi, which joins a transaction the caller has open) and the
 * transaction boundaries, and logs what was not applied. The statements run in {@link SingleRowWrite} and
 * {@link BatchWrite}.
 */
public final class DefaultFencedWriter implements FencedWriter {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultFencedWriter.class);

    /** The savepoint that makes {@link #batch} all or nothing inside a caller's transaction. */
    static final String BATCH_SAVEPOINT = "fencing_batch";

    private final Jdbi jdbi;
    private final FencePolicy policy;
    private final WriteCounters counters;
    private final SingleRowWrite rows;
    private final BatchWrite batches;
    private final WatermarkTable watermarkTable = new WatermarkTable();

    public DefaultFencedWriter(Jdbi jdbi, FencePolicy policy, WriteCounters counters) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.policy = Objects.requireNonNull(policy, "policy");
        this.counters = Objects.requireNonNull(counters, "counters");
        StatementCache statements = new StatementCache();
        this.rows = new SingleRowWrite(policy, counters, statements);
        this.batches = new BatchWrite(policy, statements);
    }

    @Override
    public FencePolicy policy() {
        return policy;
    }

    // ---- single rows

    @Override
    public WriteOutcome tryUpdate(FencedUpdate update, long token) {
        Objects.requireNonNull(update, "update");
        String table = update.table().qualifiedName();
        requireToken(table, update.key(), token);
        return logged(
                table, update.key(), onThreadHandle(table, update.key(), token, h -> rows.update(h, update, token)));
    }

    @Override
    public WriteOutcome tryUpdate(Handle handle, FencedUpdate update, long token) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(update, "update");
        String table = update.table().qualifiedName();
        requireToken(table, update.key(), token);
        return logged(
                table,
                update.key(),
                OutcomeExceptions.guarded(table, update.key(), token, () -> rows.update(handle, update, token)));
    }

    @Override
    public void update(FencedUpdate update, long token) {
        Objects.requireNonNull(update, "update");
        String table = update.table().qualifiedName();
        requireToken(table, update.key(), token);
        WriteOutcome outcome = onThreadHandle(table, update.key(), token, h -> rows.update(h, update, token));
        OutcomeExceptions.throwUnlessApplied(table, update.key(), outcome, policy);
    }

    @Override
    public WriteOutcome tryUpsert(FencedUpsert upsert, long token) {
        Objects.requireNonNull(upsert, "upsert");
        String table = upsert.table().qualifiedName();
        requireToken(table, upsert.key(), token);
        return logged(
                table, upsert.key(), onThreadHandle(table, upsert.key(), token, h -> rows.upsert(h, upsert, token)));
    }

    @Override
    public void upsert(FencedUpsert upsert, long token) {
        Objects.requireNonNull(upsert, "upsert");
        String table = upsert.table().qualifiedName();
        requireToken(table, upsert.key(), token);
        WriteOutcome outcome = onThreadHandle(table, upsert.key(), token, h -> rows.upsert(h, upsert, token));
        OutcomeExceptions.throwUnlessApplied(table, upsert.key(), outcome, policy);
    }

    // ---- claims and watermarks: a fenced write, then the caller's statements in the same transaction

    @Override
    public WriteOutcome tryClaim(Handle handle, FencedTable table, RowKey key, long token) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(table, "table");
        table.requireKey(key);
        requireToken(table.qualifiedName(), key, token);
        if (!handle.isInTransaction()) {
            throw new IllegalStateException("tryClaim needs an open transaction on the handle: the claim holds the"
                    + " row lock only until the transaction ends (use jdbi.inTransaction or claimAndRun)");
        }
        return logged(
                table.qualifiedName(),
                key,
                OutcomeExceptions.guarded(
                        table.qualifiedName(), key, token, () -> rows.claim(handle, table, key, token)));
    }

    @Override
    public <R, X extends Exception> R claimAndRun(
            FencedTable table, RowKey key, long token, HandleCallback<R, X> callback) throws X {
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(callback, "callback");
        table.requireKey(key);
        requireToken(table.qualifiedName(), key, token);
        return fencedThenRun(table.qualifiedName(), key, token, h -> rows.claim(h, table, key, token), callback);
    }

    @Override
    public WriteOutcome tryAdvanceWatermark(Handle handle, String resourceKey, long token) {
        Objects.requireNonNull(handle, "handle");
        RowKey key = watermarkKey(resourceKey);
        requireToken(WatermarkTable.NAME, key, token);
        if (!handle.isInTransaction()) {
            // on an auto-commit handle the watermark would commit alone, and the effect after it would be
            // check-then-act: exactly what the watermark is there to prevent
            throw new IllegalStateException("tryAdvanceWatermark needs an open transaction on the handle: the"
                    + " watermark fences only statements in its transaction (use jdbi.inTransaction or"
                    + " advanceWatermarkAndRun)");
        }
        return logged(
                WatermarkTable.NAME,
                key,
                OutcomeExceptions.guarded(
                        WatermarkTable.NAME,
                        key,
                        token,
                        () -> rows.watermark(handle, watermarkTable.get(handle), key, token)));
    }

    @Override
    public <R, X extends Exception> R advanceWatermarkAndRun(
            String resourceKey, long token, HandleCallback<R, X> effect) throws X {
        RowKey key = watermarkKey(resourceKey);
        Objects.requireNonNull(effect, "effect");
        requireToken(WatermarkTable.NAME, key, token);
        return fencedThenRun(
                WatermarkTable.NAME, key, token, h -> rows.watermark(h, watermarkTable.get(h), key, token), effect);
    }

    private static RowKey watermarkKey(String resourceKey) {
        if (resourceKey == null || resourceKey.isEmpty()) {
            throw new IllegalArgumentException("resource key must not be empty");
        }
        Utf8Text.requireEncodable(resourceKey, "resource key " + resourceKey);
        return RowKey.of(resourceKey);
    }

    /**
     * In a transaction on this thread's handle (joining the caller's, if one is open, without committing
     * it): the fenced write, and only if it applied, the callback. The callback's exceptions, and
     * Jdbi's from its statements, propagate unchanged; a failure before it ran becomes a FencedWriteException.
     */
    private <R, X extends Exception> R fencedThenRun(
            String table, RowKey key, long token, Function<Handle, WriteOutcome> fence, HandleCallback<R, X> callback)
            throws X {
        boolean[] entered = {false};
        HandleCallback<R, X> fencedThenCallback = h -> {
            WriteOutcome outcome = OutcomeExceptions.guarded(table, key, token, () -> fence.apply(h));
            logged(table, key, outcome);
            OutcomeExceptions.throwUnlessApplied(table, key, outcome, policy);
            entered[0] = true;
            return callback.withHandle(h);
        };
        try {
            // a plain BEGIN of the caller's on this handle is the caller's transaction: joined, never committed
            return jdbi.withHandle(h ->
                    !h.isInTransaction() && ServerTransactions.of(h.getConnection()) == ServerTransactions.State.OPEN
                            ? fencedThenCallback.withHandle(h)
                            : h.inTransaction(fencedThenCallback::withHandle));
        } catch (JdbiException e) {
            if (entered[0]) {
                throw e;
            }
            throw OutcomeExceptions.failed(table, key, token, e);
        }
    }

    // ---- batches

    @Override
    public List<WriteOutcome> tryBatch(FencedBatch batch) {
        Objects.requireNonNull(batch, "batch");
        return recordedAndLogged(
                batch, onThreadHandle(batch.table().qualifiedName(), null, 0, h -> batch(h, batch, false)));
    }

    @Override
    public List<WriteOutcome> tryBatch(Handle handle, FencedBatch batch) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(batch, "batch");
        // on an auto-commit handle, in a transaction of its own like tryBatch(batch): each of the reporting
        // statement's attempts would otherwise commit the rows it wrote, and a failure left them written
        List<WriteOutcome> outcomes =
                OutcomeExceptions.guarded(batch.table().qualifiedName(), null, 0, () -> batch(handle, batch, false));
        return recordedAndLogged(batch, outcomes);
    }

    @Override
    public void batch(FencedBatch batch) {
        Objects.requireNonNull(batch, "batch");
        recordedAndLogged(batch, onThreadHandle(batch.table().qualifiedName(), null, 0, h -> batch(h, batch, true)));
    }

    private List<WriteOutcome> batch(Handle handle, FencedBatch batch, boolean allOrNothing) {
        if (batch.size() == 0) {
            return List.of();
        }
        if (handle.isInTransaction()) {
            return inCallersTransaction(handle, batch, allOrNothing);
        }
        boolean autoCommits = autoCommits(handle);
        return openOnServer(handle, autoCommits)
                ? inCallersTransaction(handle, batch, allOrNothing)
                : inOwnTransaction(handle, batch, allOrNothing, autoCommits);
    }

    /**
     * Outside the handle's transactions: whether a transaction is open on the server all the same, which is then
     * the caller's: a transaction handler that counts only its own transactions does not see a caller's
     * statements on a connection that does not auto-commit, and nothing sees a plain {@code BEGIN} the caller
     * sent on one that does. When the driver does not say, a batch on a connection that does not auto-commit
     * refuses to guess (a transaction of its own could commit or undo the caller's work); on one that does, it
     * takes the connection at its word.
     */
    private static boolean openOnServer(Handle handle, boolean autoCommits) {
        return switch (ServerTransactions.of(handle.getConnection())) {
            case IDLE -> false;
            case OPEN -> true;
            case UNKNOWN -> {
                if (autoCommits) {
                    yield false;
                }
                throw new IllegalStateException("a fenced batch on a connection that does not auto-commit,"
                        + " outside a transaction of the handle's, needs to know whether the connection has a transaction"
                        + " open, and its driver does not say (no pgjdbc connection behind "
                        + handle.getConnection().getClass().getName()
                        + "): run the batch in a Jdbi transaction or on an auto-commit connection");
            }
        };
    }

    /**
     * First the bare UPDATE of every row, which writes them all or fails and writes none (the common case
     * writes them all). On an auto-commit connection it runs alone, its own transaction, with no BEGIN or
     * COMMIT around it (the COMMIT was a round trip of its own): PostgreSQL commits it when it wrote every
     * row and undoes it when it failed. On a connection that does not auto-commit although the handle is
     * in no transaction (a transaction handler that counts only the transactions it began, such as Jdbi's
     * {@code LocalTransactionHandler.managed()} from 3.55), it runs in a transaction of its own, rolled
     * back on failure, as it would otherwise be left uncommitted. When it did not write
     * every row, the reporting statement runs in a new transaction, a complete fenced write again; with
     * {@code allOrNothing}, a row not written throws inside it, which rolls back the rows that were.
     */
    private List<WriteOutcome> inOwnTransaction(
            Handle handle, FencedBatch batch, boolean allOrNothing, boolean autoCommits) {
        if (autoCommits) {
            if (batches.writeAll(handle, batch)) {
                return BatchWrite.allApplied(batch);
            }
        } else {
            try {
                return handle.inTransaction(h -> {
                    if (!batches.writeAll(h, batch)) {
                        throw new NotAllWritten();
                    }
                    return BatchWrite.allApplied(batch);
                });
            } catch (NotAllWritten e) {
                // rolled back; fall through to the reporting statement
            }
        }
        return handle.inTransaction(h -> reported(h, batch, allOrNothing));
    }

    private static boolean autoCommits(Handle handle) {
        try {
            return handle.getConnection().getAutoCommit();
        } catch (SQLException e) {
            throw new TransactionException("could not read the connection's auto-commit mode", e);
        }
    }

    /**
     * Inside the caller's transaction a rollback of our own would undo the caller's work too, so tryBatch
     * runs the reporting statement alone, and batch() runs under a savepoint that it rolls back to when a
     * row was not written: all or nothing holds for the batch, and the caller's transaction stays usable.
     * The savepoint is the JDBC connection's, not Jdbi's: Jdbi forgets a savepoint once rolled back to,
     * and this one is rolled back to twice when the bare statement did not write every row.
     */
    private List<WriteOutcome> inCallersTransaction(Handle handle, FencedBatch batch, boolean allOrNothing) {
        if (!allOrNothing) {
            return batches.writeAndReport(handle, batch);
        }
        // savepoints as statements: the driver's savepoint API refuses an auto-commit connection, which a plain
        // BEGIN of the caller's leaves in auto-commit mode
        savepoint(handle, "SAVEPOINT ");
        List<WriteOutcome> outcomes;
        try {
            if (batches.writeAll(handle, batch)) {
                outcomes = BatchWrite.allApplied(batch);
            } else {
                savepoint(handle, "ROLLBACK TO SAVEPOINT ");
                outcomes = reported(handle, batch, true);
            }
        } catch (RuntimeException e) {
            try {
                savepoint(handle, "ROLLBACK TO SAVEPOINT ");
            } catch (RuntimeException rollback) {
                e.addSuppressed(rollback);
            }
            throw e;
        }
        savepoint(handle, "RELEASE SAVEPOINT ");
        return outcomes;
    }

    private static void savepoint(Handle handle, String command) {
        try (Statement statement = handle.getConnection().createStatement()) {
            statement.execute(command + BATCH_SAVEPOINT);
        } catch (SQLException e) {
            throw new TransactionException("savepoint " + BATCH_SAVEPOINT + " of a fenced batch failed", e);
        }
    }

    private List<WriteOutcome> reported(Handle handle, FencedBatch batch, boolean allOrNothing) {
        List<WriteOutcome> outcomes = batches.writeAndReport(handle, batch);
        for (int i = 0; allOrNothing && i < outcomes.size(); i++) {
            OutcomeExceptions.throwUnlessApplied(
                    batch.table().qualifiedName(), batch.keys().get(i), outcomes.get(i), policy);
        }
        return outcomes;
    }

    /** Thrown inside a batch's own transaction to roll back a bare batch that did not write every row. */
    private static final class NotAllWritten extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotAllWritten() {
            super("not every row of the batch was written", null, false, false);
        }
    }

    /** Counts a batch's outcomes, a run of rows with the same kind of outcome at once, and logs those not applied. */
    private List<WriteOutcome> recordedAndLogged(FencedBatch batch, List<WriteOutcome> outcomes) {
        String table = batch.table().qualifiedName();
        int runStart = 0;
        for (int i = 0; i < outcomes.size(); i++) {
            WriteOutcome outcome = outcomes.get(i);
            if (outcome.getClass() != outcomes.get(runStart).getClass()) {
                counters.record(table, outcomes.get(runStart), i - runStart);
                runStart = i;
            }
            logged(table, batch.keys().get(i), outcome);
        }
        if (!outcomes.isEmpty()) {
            counters.record(table, outcomes.get(runStart), outcomes.size() - runStart);
        }
        return outcomes;
    }

    // ---- shared

    private static void requireToken(String table, RowKey key, long token) {
        FenceTokens.requirePositive(token, table + " key " + key);
    }

    /** On this thread's handle: Jdbi's, which is the caller's (and in its transaction) inside jdbi.useTransaction. */
    private <T> T onThreadHandle(String table, RowKey key, long token, HandleCallback<T, RuntimeException> work) {
        return OutcomeExceptions.guarded(table, key, token, () -> jdbi.withHandle(work));
    }

    private static WriteOutcome logged(String table, RowKey key, WriteOutcome outcome) {
        if (!outcome.isApplied() && LOG.isDebugEnabled()) {
            LOG.debug("fenced write to {} key {} not applied: {}", table, key, outcome);
        }
        return outcome;
    }
}
