package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedUpsert;
import dev.fencing.jdbc.FencedWriteException;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.argument.Argument;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.Update;

/**
 * One fenced single-row write (update, upsert, claim, watermark) on a handle, and its report: first the
 * bare fenced statement, whose update count says whether it applied; only when it wrote nothing, the
 * reporting statement, which writes again and says why not in the same statement, run again while its
 * snapshot contradicts its write. Counts each outcome. Thread-safe; the handle is the caller's.
 */
final class SingleRowWrite {
    /**
     * How often the reporting statement is run again when its snapshot admitted the token but the row
     * changed under it (see FencedWriter's javadoc). Each run is a complete fenced write, so re-running is
     * safe.
     */
    static final int MAX_ATTEMPTS = 10;

    private final FencePolicy policy;
    private final WriteCounters counters;
    private final StatementCache statements;

    SingleRowWrite(FencePolicy policy, WriteCounters counters, StatementCache statements) {
        this.policy = policy;
        this.counters = counters;
        this.statements = statements;
    }

    WriteOutcome update(Handle handle, FencedUpdate update, long token) {
        FencedTable table = update.table();
        List<Object> shape = new ArrayList<>(2);
        shape.add(update.setClause());
        shape.add(update.predicate());
        String bare = statements.get(
                new StatementCache.Key("bare update", table, shape),
                () -> FencedSql.bareUpdate(table, update.setClause(), update.predicate(), policy));
        Supplier<String> reporting = () -> statements.get(
                new StatementCache.Key("update", table, shape),
                () -> FencedSql.update(table, update.setClause(), update.predicate(), policy));
        return run(handle, table, update.key(), token, bare, reporting, update.bindings(), true);
    }

    WriteOutcome upsert(Handle handle, FencedUpsert upsert, long token) {
        FencedTable table = upsert.table();
        List<String> columns = new ArrayList<>(upsert.values().keySet());
        String bare = statements.get(
                new StatementCache.Key("bare upsert", table, List.copyOf(columns)),
                () -> FencedSql.bareUpsert(table, columns, policy, null));
        Supplier<String> reporting = () -> statements.get(
                new StatementCache.Key("upsert", table, List.copyOf(columns)),
                () -> FencedSql.upsert(table, columns, policy, null));
        Map<String, Object> bindings = new LinkedHashMap<>();
        for (int i = 0; i < columns.size(); i++) {
            bindings.put(FencedSql.valueBinding(i), upsert.values().get(columns.get(i)));
        }
        return run(handle, table, upsert.key(), token, bare, reporting, bindings, false);
    }

    /** A fenced UPDATE that sets only the fence column: it takes the row lock until the transaction ends. */
    WriteOutcome claim(Handle handle, FencedTable table, RowKey key, long token) {
        String bare = statements.get(
                new StatementCache.Key("bare claim", table, List.of()),
                () -> FencedSql.bareUpdate(table, "", null, policy));
        Supplier<String> reporting = () -> statements.get(
                new StatementCache.Key("claim", table, List.of()), () -> FencedSql.update(table, "", null, policy));
        return run(handle, table, key, token, bare, reporting, Map.of(), true);
    }

    /** Inserts the watermark row or raises it: an upsert that also stamps {@code updated_at}. */
    WriteOutcome watermark(Handle handle, FencedTable watermark, RowKey key, long token) {
        String bare = statements.get(
                new StatementCache.Key("bare watermark", watermark, List.of()),
                () -> FencedSql.bareUpsert(watermark, List.of(), policy, WatermarkTable.STAMP));
        Supplier<String> reporting = () -> statements.get(
                new StatementCache.Key("watermark", watermark, List.of()),
                () -> FencedSql.upsert(watermark, List.of(), policy, WatermarkTable.STAMP));
        return run(handle, watermark, key, token, bare, reporting, Map.of(), false);
    }

    private WriteOutcome run(
            Handle handle,
            FencedTable table,
            RowKey key,
            long token,
            String bare,
            Supplier<String> reporting,
            Map<String, Object> bindings,
            boolean rowMustExist) {
        Update first = StatementParser.update(handle, bare);
        bind(first, key, token, bindings);
        int written = first.execute();
        if (written > 1) {
            throw keyNamesRows(table, key, token, written, written);
        }
        if (written == 1) {
            return counted(table, new WriteOutcome.Applied(token));
        }
        // nothing written: a complete fenced write again, this time reporting why in the same statement
        String sql = reporting.get();
        for (int attempt = 1; ; attempt++) {
            Query query = StatementParser.query(handle, sql);
            bind(query, key, token, bindings);
            List<Report> reports = query.map((rs, ctx) -> {
                        long stored = rs.getLong("stored");
                        boolean absent = rs.wasNull();
                        return new Report(
                                rs.getLong("applied"), absent ? null : stored, rs.getBoolean("predicate_holds"));
                    })
                    .list();
            // one row, unless the statement wrote nothing and its key found several: the same fault as a
            // write of several rows
            if (reports.size() > 1) {
                throw keyNamesRows(table, key, token, 0, reports.size());
            }
            Report report = reports.get(0);
            if (report.applied() > 1) {
                throw keyNamesRows(table, key, token, report.applied(), report.applied());
            }
            WriteOutcome outcome = report.outcome(policy, token, rowMustExist);
            if (outcome != null) {
                return counted(table, outcome);
            }
            if (attempt == MAX_ATTEMPTS) {
                throw OutcomeExceptions.changedConcurrently(table.qualifiedName(), key, token, MAX_ATTEMPTS);
            }
            // the snapshot admits the write, yet the row changed under the statement: run it again
        }
    }

    /**
     * A write that wrote more than one row, or wrote none and found more than one: the key no longer names
     * one row (the table's unique key, which {@link FencedTable} checked, was dropped or replaced since).
     * Never reported as applied; what it wrote is undone with the caller's transaction, and stays on an
     * auto-commit connection.
     */
    private static FencedWriteException keyNamesRows(
            FencedTable table, RowKey key, long token, long written, long found) {
        return new FencedWriteException(
                "fenced write on " + table.qualifiedName() + " key " + key + " wrote " + written + " rows"
                        + (written == found ? "" : " and found " + found) + ": its key columns "
                        + table.keyColumns() + " no longer name one row (dropped unique key?)",
                table.qualifiedName(),
                key,
                token,
                null);
    }

    private WriteOutcome counted(FencedTable table, WriteOutcome outcome) {
        counters.record(table.qualifiedName(), outcome);
        return outcome;
    }

    private static void bind(SqlStatement<?> statement, RowKey key, long token, Map<String, Object> bindings) {
        List<Object> keyValues = key.values();
        for (int i = 0; i < keyValues.size(); i++) {
            Object value = LibraryArguments.ofKey(keyValues.get(i));
            if (value instanceof Argument argument) {
                statement.bind(FencedSql.keyBinding(i), argument);
            } else {
                statement.bind(FencedSql.keyBinding(i), value);
            }
        }
        statement.bind(FencedSql.TOKEN, LibraryArguments.ofLong(token));
        bindings.forEach(statement::bind);
    }

    /** One row of the reporting statement: rows written, the stored token (null: absent) and the predicate. */
    record Report(long applied, Long stored, boolean predicateHolds) {
        /** The outcome this report proves, or null when it contradicts itself and the write must run again. */
        WriteOutcome outcome(FencePolicy policy, long token, boolean rowMustExist) {
            if (applied > 0) {
                return new WriteOutcome.Applied(token);
            } else if (stored == null && rowMustExist) {
                return new WriteOutcome.NotFound(token);
            } else if (stored != null && !policy.admits(stored, token)) {
                return new WriteOutcome.Rejected(stored, token);
            } else if (stored != null && !predicateHolds) {
                return new WriteOutcome.PredicateFailed(stored, token);
            }
            return null;
        }
    }
}
