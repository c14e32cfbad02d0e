package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.FenceTokens;
import dev.fencing.jdbc.FencePredicateFailedException;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedRowNotFoundException;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedUpsert;
import dev.fencing.jdbc.FencedWriteException;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.FencingJdbcException;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.StaleFenceException;
import dev.fencing.jdbc.WriteOutcome;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.Update;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link FencedWriter}; see its javadoc for the contract. */
public final class DefaultFencedWriter implements FencedWriter {
    private static final Logger log = LoggerFactory.getLogger(DefaultFencedWriter.class);

    /**
     * How often one fenced statement is run again when its snapshot admitted the token but the row changed
     * under it (see FencedWriter's javadoc). Each run is a complete fenced write, so re-running is safe.
     */
    static final int MAX_ATTEMPTS = 10;

    private static final String WATERMARK = "fencing.watermark";

    private final Jdbi jdbi;
    private final FencePolicy policy;
    private final WriteCounters counters;
    private volatile FencedTable watermarkTable;

    /** Bounded so that callers generating endless distinct shapes cannot grow it without end. */
    static final int MAX_CACHED_STATEMENTS = 1_000;

    private final java.util.concurrent.ConcurrentMap<List<Object>, String> statements =
            new java.util.concurrent.ConcurrentHashMap<>();

    public DefaultFencedWriter(Jdbi jdbi, FencePolicy policy, WriteCounters counters) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.policy = Objects.requireNonNull(policy, "policy");
        this.counters = Objects.requireNonNull(counters, "counters");
    }

    @Override
    public FencePolicy policy() {
        return policy;
    }

    // ---- update

    @Override
    public WriteOutcome tryUpdate(FencedUpdate update, long token) {
        Objects.requireNonNull(update, "update");
        requireToken(update.table().qualifiedName(), update.key(), token);
        return logged(
                update.table(),
                update.key(),
                withHandle(update.table(), update.key(), token, h -> runUpdate(h, update, token)));
    }

    @Override
    public WriteOutcome tryUpdate(Handle handle, FencedUpdate update, long token) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(update, "update");
        requireToken(update.table().qualifiedName(), update.key(), token);
        return logged(
                update.table(),
                update.key(),
                guarded(update.table(), update.key(), token, () -> runUpdate(handle, update, token)));
    }

    @Override
    public void update(FencedUpdate update, long token) {
        Objects.requireNonNull(update, "update");
        requireToken(update.table().qualifiedName(), update.key(), token);
        WriteOutcome outcome = withHandle(update.table(), update.key(), token, h -> runUpdate(h, update, token));
        throwUnlessApplied(update.table().qualifiedName(), update.key(), outcome);
    }

    private WriteOutcome runUpdate(Handle handle, FencedUpdate update, long token) {
        List<Object> shape =
                List.of("update", update.table(), update.setClause(), Objects.toString(update.predicate()));
        String bare = statement(
                List.of("bare", shape),
                () -> FencedSql.bareUpdate(update.table(), update.setClause(), update.predicate(), policy));
        Supplier<String> sql = () -> statement(
                shape, () -> FencedSql.update(update.table(), update.setClause(), update.predicate(), policy));
        return run(handle, update.table(), update.key(), token, bare, sql, update.bindings(), true);
    }

    // ---- upsert

    @Override
    public WriteOutcome tryUpsert(FencedUpsert upsert, long token) {
        Objects.requireNonNull(upsert, "upsert");
        requireToken(upsert.table().qualifiedName(), upsert.key(), token);
        return logged(
                upsert.table(),
                upsert.key(),
                withHandle(upsert.table(), upsert.key(), token, h -> runUpsert(h, upsert, token)));
    }

    @Override
    public void upsert(FencedUpsert upsert, long token) {
        Objects.requireNonNull(upsert, "upsert");
        requireToken(upsert.table().qualifiedName(), upsert.key(), token);
        WriteOutcome outcome = withHandle(upsert.table(), upsert.key(), token, h -> runUpsert(h, upsert, token));
        throwUnlessApplied(upsert.table().qualifiedName(), upsert.key(), outcome);
    }

    private WriteOutcome runUpsert(Handle handle, FencedUpsert upsert, long token) {
        List<String> columns = new ArrayList<>(upsert.values().keySet());
        String bare = statement(
                List.of("bare upsert", upsert.table(), columns),
                () -> FencedSql.bareUpsert(upsert.table(), columns, policy, null));
        Supplier<String> sql = () -> statement(
                List.of("upsert", upsert.table(), columns),
                () -> FencedSql.upsert(upsert.table(), columns, policy, null));
        Map<String, Object> bindings = new java.util.LinkedHashMap<>();
        for (int i = 0; i < columns.size(); i++) {
            bindings.put(FencedSql.valueBinding(i), upsert.values().get(columns.get(i)));
        }
        return run(handle, upsert.table(), upsert.key(), token, bare, sql, bindings, false);
    }

    // ---- watermark

    @Override
    public WriteOutcome tryAdvanceWatermark(String resourceKey, long token) {
        RowKey key = watermarkKey(resourceKey);
        requireToken(WATERMARK, key, token);
        return logged(null, key, withHandle(null, key, token, h -> runWatermark(h, key, token)));
    }

    @Override
    public WriteOutcome tryAdvanceWatermark(Handle handle, String resourceKey, long token) {
        Objects.requireNonNull(handle, "handle");
        RowKey key = watermarkKey(resourceKey);
        requireToken(WATERMARK, key, token);
        return logged(null, key, guarded(null, key, token, () -> runWatermark(handle, key, token)));
    }

    @Override
    public void advanceWatermark(String resourceKey, long token) {
        RowKey key = watermarkKey(resourceKey);
        requireToken(WATERMARK, key, token);
        throwUnlessApplied(WATERMARK, key, withHandle(null, key, token, h -> runWatermark(h, key, token)));
    }

    private static RowKey watermarkKey(String resourceKey) {
        if (resourceKey == null || resourceKey.isEmpty()) {
            throw new IllegalArgumentException("resource key must not be empty");
        }
        return RowKey.of(resourceKey);
    }

    private WriteOutcome runWatermark(Handle handle, RowKey key, long token) {
        FencedTable table = watermarkTable;
        if (table == null) {
            table = FencedTable.builder()
                    .schema("fencing")
                    .table("watermark")
                    .keyColumns("resource_key")
                    .fenceColumn("fence_token")
                    .build(handle);
            watermarkTable = table;
        }
        FencedTable watermark = table;
        String bare = statement(
                List.of("bare watermark"),
                () -> FencedSql.bareUpsert(watermark, List.of(), policy, "\"updated_at\" = now()"));
        Supplier<String> sql = () -> statement(
                List.of("watermark"), () -> FencedSql.upsert(watermark, List.of(), policy, "\"updated_at\" = now()"));
        return run(handle, table, key, token, bare, sql, Map.of(), false);
    }

    // ---- batch

    @Override
    public List<WriteOutcome> tryBatch(FencedBatch batch) {
        Objects.requireNonNull(batch, "batch");
        // One transaction, so a batch that fails midway (a retry after a concurrent change, a lost
        // connection) commits none of its rows rather than some rows whose outcomes the caller never sees.
        List<WriteOutcome> outcomes = guarded(batch.table(), null, 0, () -> inOwnTransaction(batch, false));
        for (int i = 0; i < outcomes.size(); i++) {
            logged(batch.table(), batch.keys().get(i), outcomes.get(i));
        }
        return outcomes;
    }

    @Override
    public List<WriteOutcome> tryBatch(Handle handle, FencedBatch batch) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(batch, "batch");
        List<WriteOutcome> outcomes = guarded(batch.table(), null, 0, () -> runBatch(handle, batch));
        record(batch.table(), outcomes);
        for (int i = 0; i < outcomes.size(); i++) {
            logged(batch.table(), batch.keys().get(i), outcomes.get(i));
        }
        return outcomes;
    }

    @Override
    public void batch(FencedBatch batch) {
        Objects.requireNonNull(batch, "batch");
        guarded(batch.table(), null, 0, () -> inOwnTransaction(batch, true));
    }

    /**
     * Runs the batch in a transaction of the writer's own: first {@link #bareBatch}, and only if it did not
     * write every row, the reporting statement in a new transaction. With {@code allOrNothing}, a row that was
     * not written throws inside that transaction, which rolls back the rows that were. Counters are recorded
     * once the transaction has committed.
     *
     * <p>When this thread's handle is already in a transaction (a caller's {@code jdbi.useTransaction} around
     * this call; Jdbi then hands out that handle and joins its transaction), the bare statement could not be
     * rolled back on its own, so only the reporting statement runs, inside the caller's transaction.
     */
    private List<WriteOutcome> inOwnTransaction(FencedBatch batch, boolean allOrNothing) {
        List<WriteOutcome> outcomes = jdbi.withHandle(handle -> {
            if (!handle.isInTransaction()) {
                try {
                    return handle.inTransaction(h -> bareBatch(h, batch));
                } catch (NotAllWritten e) {
                    // rolled back: the reporting statement below writes the batch again, in a new transaction
                }
            }
            return handle.inTransaction(h -> {
                List<WriteOutcome> reported = runBatch(h, batch);
                for (int i = 0; allOrNothing && i < reported.size(); i++) {
                    throwUnlessApplied(
                            batch.table().qualifiedName(), batch.keys().get(i), reported.get(i));
                }
                return reported;
            });
        });
        record(batch.table(), outcomes);
        return outcomes;
    }

    private void record(FencedTable table, List<WriteOutcome> outcomes) {
        for (WriteOutcome outcome : outcomes) {
            counters.record(table.qualifiedName(), outcome);
        }
    }

    /** Thrown inside a batch's own transaction to roll back a bare batch that did not write every row. */
    private static final class NotAllWritten extends RuntimeException {
        NotAllWritten() {
            super("not every row of the batch was written", null, false, false);
        }
    }

    /**
     * The batch as the bare fenced UPDATE, in a transaction of the writer's own: when its update count says
     * every row was written (the common case), all are applied and nothing is read back. Otherwise it throws
     * {@link NotAllWritten}, which rolls the transaction back, and the caller runs the reporting statement
     * ({@link #runBatch}) in a new one: a complete fenced write again, which may find the rows changed in
     * between and is as correct as the first.
     */
    private List<WriteOutcome> bareBatch(Handle handle, FencedBatch batch) {
        BatchShape shape = BatchShape.of(batch);
        String sql = statement(
                shape.cacheKey("bare batch", batch),
                () -> FencedSql.batch(
                        batch.table(),
                        batch.columns(),
                        policy,
                        shape.integralKeys,
                        shape.integralValues,
                        shape.oneToken,
                        true));
        List<Integer> rows = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            rows.add(i);
        }
        Update update = handle.createUpdate(sql);
        bindBatch(update, batch, shape, rows);
        if (update.execute() != batch.size()) {
            throw new NotAllWritten();
        }
        List<WriteOutcome> outcomes = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            outcomes.add(new WriteOutcome.Applied(batch.tokens().get(i)));
        }
        return outcomes;
    }

    /** How a batch's columns travel and whether it has one token; part of its statement's cache key. */
    private static final class BatchShape {
        final boolean[] integralKeys;
        final boolean[] integralValues;
        final boolean oneToken;
        final long firstToken;

        private BatchShape(boolean[] integralKeys, boolean[] integralValues, boolean oneToken, long firstToken) {
            this.integralKeys = integralKeys;
            this.integralValues = integralValues;
            this.oneToken = oneToken;
            this.firstToken = firstToken;
        }

        static BatchShape of(FencedBatch batch) {
            boolean[] integralKeys = new boolean[batch.table().keyColumns().size()];
            for (int k = 0; k < integralKeys.length; k++) {
                integralKeys[k] = BatchValues.integral(batch.keyValues(k));
            }
            boolean[] integralValues = new boolean[batch.columns().size()];
            for (int c = 0; c < integralValues.length; c++) {
                integralValues[c] = BatchValues.integral(batch.values(c));
            }
            long firstToken = batch.size() == 0 ? 0 : batch.tokens().get(0);
            boolean oneToken = batch.tokens().stream().allMatch(t -> t == firstToken);
            return new BatchShape(integralKeys, integralValues, oneToken, firstToken);
        }

        List<Object> cacheKey(String kind, FencedBatch batch) {
            return List.of(
                    kind,
                    batch.table(),
                    batch.columns(),
                    Arrays.toString(integralKeys),
                    Arrays.toString(integralValues),
                    oneToken);
        }
    }

    /** Binds the token(s), keys and values of the batch's {@code rows}. */
    private static void bindBatch(SqlStatement<?> statement, FencedBatch batch, BatchShape shape, List<Integer> rows) {
        if (shape.oneToken) {
            statement.bind(FencedSql.TOKEN, shape.firstToken);
        } else {
            List<Long> tokens = new ArrayList<>(rows.size());
            for (int row : rows) {
                tokens.add(batch.tokens().get(row));
            }
            statement.bindArray(FencedSql.BATCH_TOKENS, Long.class, tokens);
        }
        for (int k = 0; k < shape.integralKeys.length; k++) {
            bindColumn(statement, FencedSql.batchKeys(k), shape.integralKeys[k], batch.keyValues(k), rows);
        }
        for (int c = 0; c < shape.integralValues.length; c++) {
            bindColumn(statement, FencedSql.batchValues(c), shape.integralValues[c], batch.values(c), rows);
        }
    }

    private List<WriteOutcome> runBatch(Handle handle, FencedBatch batch) {
        FencedTable table = batch.table();
        WriteOutcome[] outcomes = new WriteOutcome[batch.size()];
        List<Integer> pending = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            pending.add(i);
        }
        BatchShape shape = BatchShape.of(batch);
        String sql = statement(
                shape.cacheKey("batch", batch),
                () -> FencedSql.batch(
                        table,
                        batch.columns(),
                        policy,
                        shape.integralKeys,
                        shape.integralValues,
                        shape.oneToken,
                        false));
        for (int attempt = 1; !pending.isEmpty(); attempt++) {
            Query query = handle.createQuery(sql);
            bindBatch(query, batch, shape, pending);
            query.bind(FencedSql.BATCH_SIZE, (long) pending.size());
            // only the rows that were not written come back; every other pending row was applied
            List<long[]> rows = query.map((rs, ctx) -> {
                        long ord = rs.getLong("ord");
                        long stored = rs.getLong("stored");
                        return rs.wasNull() ? new long[] {ord} : new long[] {ord, stored};
                    })
                    .list();
            boolean[] notWritten = new boolean[pending.size()];
            List<Integer> again = new ArrayList<>();
            for (long[] row : rows) {
                int position = (int) row[0] - 1;
                notWritten[position] = true;
                int index = pending.get(position);
                long token = batch.tokens().get(index);
                WriteOutcome outcome;
                if (row.length == 1) {
                    outcome = new WriteOutcome.NotFound(token);
                } else if (!policy.admits(row[1], token)) {
                    outcome = new WriteOutcome.Rejected(row[1], token);
                } else if (attempt < MAX_ATTEMPTS) {
                    again.add(index);
                    continue;
                } else {
                    throw changedConcurrently(
                            table.qualifiedName(), batch.keys().get(index), token);
                }
                outcomes[index] = outcome;
            }
            for (int position = 0; position < notWritten.length; position++) {
                if (!notWritten[position]) {
                    int index = pending.get(position);
                    WriteOutcome outcome =
                            new WriteOutcome.Applied(batch.tokens().get(index));
                    outcomes[index] = outcome;
                }
            }
            pending = again;
        }
        return Arrays.asList(outcomes);
    }

    private static void bindColumn(
            SqlStatement<?> query, String name, boolean integral, List<Object> values, List<Integer> rows) {
        if (integral) {
            query.bindArray(name, Long.class, BatchValues.longs(values, rows));
        } else {
            query.bindArray(name, String.class, BatchValues.texts(values, rows));
        }
    }

    // ---- claim

    @Override
    public WriteOutcome tryClaim(Handle handle, FencedTable table, RowKey key, long token) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(key, "key");
        requireToken(table.qualifiedName(), key, token);
        if (!handle.isInTransaction()) {
            throw new IllegalStateException("tryClaim needs an open transaction on the handle: the claim holds the"
                    + " row lock only until the transaction ends (use jdbi.inTransaction or claimAndRun)");
        }
        return logged(table, key, guarded(table, key, token, () -> runClaim(handle, table, key, token)));
    }

    @Override
    public <R, X extends Exception> R claimAndRun(
            FencedTable table, RowKey key, long token, HandleCallback<R, X> callback) throws X {
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(callback, "callback");
        requireToken(table.qualifiedName(), key, token);
        Handle handle;
        try {
            handle = jdbi.open();
        } catch (JdbiException e) {
            throw failed(table.qualifiedName(), key, token, e);
        }
        try (handle) {
            return handle.inTransaction(h -> {
                WriteOutcome claim = guarded(table, key, token, () -> runClaim(h, table, key, token));
                throwUnlessApplied(table.qualifiedName(), key, claim);
                return callback.withHandle(h);
            });
        }
    }

    private WriteOutcome runClaim(Handle handle, FencedTable table, RowKey key, long token) {
        String bare = statement(List.of("bare claim", table), () -> FencedSql.bareUpdate(table, "", null, policy));
        Supplier<String> sql =
                () -> statement(List.of("claim", table), () -> FencedSql.update(table, "", null, policy));
        return run(handle, table, key, token, bare, sql, Map.of(), true);
    }

    // ---- shared

    /**
     * Statement text by shape. Handing Jdbi and the driver the very same String for the same shape lets
     * their caches (parsed SQL, server-side prepared statements) hit without re-reading the text; measured
     * at about 20 us per write otherwise.
     */
    private String statement(List<Object> shape, Supplier<String> render) {
        String sql = statements.get(shape);
        if (sql == null) {
            sql = render.get();
            if (statements.size() < MAX_CACHED_STATEMENTS) {
                String previous = statements.putIfAbsent(shape, sql);
                sql = previous != null ? previous : sql;
            }
        }
        return sql;
    }

    /**
     * Runs one fenced single-row statement and reads its report, running it again while its snapshot
     * contradicts its write (see the class javadoc of FencedWriter).
     */
    private WriteOutcome run(
            Handle handle,
            FencedTable table,
            RowKey key,
            long token,
            String bare,
            Supplier<String> reporting,
            Map<String, Object> bindings,
            boolean rowMustExist) {
        Update first = handle.createUpdate(bare);
        bindRow(first, key, token, bindings);
        if (first.execute() > 0) {
            WriteOutcome applied = new WriteOutcome.Applied(token);
            counters.record(table == null ? WATERMARK : table.qualifiedName(), applied);
            return applied;
        }
        // nothing written: a complete fenced write again, this time reporting why in the same statement
        String sql = reporting.get();
        for (int attempt = 1; ; attempt++) {
            Query query = handle.createQuery(sql);
            bindRow(query, key, token, bindings);
            Report report = query.map((rs, ctx) -> {
                        long stored = rs.getLong("stored");
                        boolean absent = rs.wasNull();
                        boolean holds = rs.getBoolean("predicate_holds");
                        return new Report(rs.getLong("applied"), absent ? null : stored, holds);
                    })
                    .one();
            WriteOutcome outcome;
            if (report.applied > 0) {
                outcome = new WriteOutcome.Applied(token);
            } else if (report.stored == null && rowMustExist) {
                outcome = new WriteOutcome.NotFound(token);
            } else if (report.stored != null && !policy.admits(report.stored, token)) {
                outcome = new WriteOutcome.Rejected(report.stored, token);
            } else if (report.stored != null && !report.predicateHolds) {
                outcome = new WriteOutcome.PredicateFailed(report.stored, token);
            } else if (attempt < MAX_ATTEMPTS) {
                // the snapshot admits the write, yet the row changed under the statement: run it again
                continue;
            } else {
                throw changedConcurrently(table == null ? WATERMARK : table.qualifiedName(), key, token);
            }
            counters.record(table == null ? WATERMARK : table.qualifiedName(), outcome);
            return outcome;
        }
    }

    private static void bindRow(SqlStatement<?> statement, RowKey key, long token, Map<String, Object> bindings) {
        List<Object> keyValues = key.values();
        for (int i = 0; i < keyValues.size(); i++) {
            statement.bind(FencedSql.keyBinding(i), keyValues.get(i));
        }
        statement.bind(FencedSql.TOKEN, token);
        bindings.forEach(statement::bind);
    }

    private static final class Report {
        final long applied;
        final Long stored;
        final boolean predicateHolds;

        Report(long applied, Long stored, boolean predicateHolds) {
            this.applied = applied;
            this.stored = stored;
            this.predicateHolds = predicateHolds;
        }
    }

    private static FencedWriteException changedConcurrently(String table, RowKey key, long token) {
        return new FencedWriteException(
                "row of " + table + " key " + key + " changed concurrently during each of " + MAX_ATTEMPTS
                        + " attempts of the fenced write under token " + token + "; nothing was written",
                table,
                key,
                token,
                null);
    }

    private static void requireToken(String table, RowKey key, long token) {
        FenceTokens.requirePositive(token, table + " key " + key);
    }

    private <T> T withHandle(FencedTable table, RowKey key, long token, HandleCallback<T, RuntimeException> work) {
        return guarded(table, key, token, () -> jdbi.withHandle(work));
    }

    private static <T> T guarded(FencedTable table, RowKey key, long token, Supplier<T> work) {
        try {
            return work.get();
        } catch (FencingJdbcException e) {
            throw e;
        } catch (JdbiException e) {
            throw failed(table == null ? WATERMARK : table.qualifiedName(), key, token, e);
        }
    }

    private static void guarded(FencedTable table, RowKey key, long token, Runnable work) {
        guarded(table, key, token, () -> {
            work.run();
            return null;
        });
    }

    private static FencedWriteException failed(String table, RowKey key, long token, JdbiException e) {
        return new FencedWriteException(
                "fenced write to " + table + (key == null ? "" : " key " + key)
                        + (token > 0 ? " under token " + token : "") + " failed: " + e.getMessage(),
                table,
                key,
                token,
                e);
    }

    private WriteOutcome logged(FencedTable table, RowKey key, WriteOutcome outcome) {
        if (!outcome.isApplied() && log.isDebugEnabled()) {
            log.debug(
                    "fenced write to {} key {} not applied: {}",
                    table == null ? WATERMARK : table.qualifiedName(),
                    key,
                    outcome);
        }
        return outcome;
    }

    private void throwUnlessApplied(String table, RowKey key, WriteOutcome outcome) {
        if (outcome instanceof WriteOutcome.Rejected) {
            WriteOutcome.Rejected rejected = (WriteOutcome.Rejected) outcome;
            throw new StaleFenceException(table, key, rejected.storedToken(), rejected.offeredToken(), policy);
        } else if (outcome instanceof WriteOutcome.NotFound) {
            throw new FencedRowNotFoundException(table, key, outcome.offeredToken());
        } else if (outcome instanceof WriteOutcome.PredicateFailed) {
            throw new FencePredicateFailedException(
                    table, key, ((WriteOutcome.PredicateFailed) outcome).storedToken(), outcome.offeredToken());
        }
    }
}
