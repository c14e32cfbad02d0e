package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencePolicy;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.PostgresAccess;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedUpsert;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.StaleFenceException;
import dev.fencing.jdbc.WriteOutcome;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * Appends an operation's id to its resource's row ({@code <schema>.resources.ids}), the workload's write. The
 * fenced run goes through fencing-jdbc on one of four paths, so each of them is attacked; the control run uses
 * a plain UPDATE that checks no token. Every append is one transaction, and {@code inTransaction} runs inside
 * it after the write took effect and before the commit: where a backend kill lands. Thread-safe.
 */
final class ResourceWriter {
    /** Runs in the write's transaction, after the write applied, before the commit. */
    @FunctionalInterface
    interface TransactionPoint {
        void reached(Handle handle);
    }

    private final Jdbi jdbi;
    private final String schema;
    private final String appendSql;
    private final FencedWriter writer;
    private final FencedTable table;

    private ResourceWriter(Jdbi jdbi, String schema, FencePolicy policy) {
        this.jdbi = jdbi;
        this.schema = schema;
        this.appendSql = "UPDATE " + schema + ".resources SET ids = array_append(ids, CAST(? AS BIGINT)),"
                + " last_op = CAST(? AS BIGINT) WHERE resource = ?";
        if (policy != null) {
            this.table = FencedTable.builder()
                    .schema(schema)
                    .table("resources")
                    .keyColumns("resource")
                    .build(jdbi);
            this.writer = FencedWriter.builder(jdbi).policy(policy).build();
        } else {
            this.table = null;
            this.writer = null;
        }
    }

    /** Through fencing-jdbc under {@code policy}: STRICT where each grant writes a row once. */
    static ResourceWriter fenced(Jdbi jdbi, String schema, FencePolicy policy) {
        return new ResourceWriter(jdbi, schema, policy);
    }

    static ResourceWriter plain(Jdbi jdbi, String schema) {
        return new ResourceWriter(jdbi, schema, null);
    }

    /**
     * A writer's small pool for {@code jdbcUrl} and {@code jdbcUser}, with the password from {@value
     * WriterMain#PASSWORD_ENV}.
     */
    static HikariDataSource pool(ChildArguments args, int client) {
        HikariConfig pool = PostgresAccess.childPool(args, WriterMain.PASSWORD_ENV, 2, "writer-" + client);
        pool.setConnectionTimeout(10_000);
        return new HikariDataSource(pool);
    }

    String schema() {
        return schema;
    }

    /** Appends {@code op} to {@code resource}'s list under {@code token} along {@code path}. Never throws. */
    WriteResult append(WritePath path, String resource, long op, long token, TransactionPoint point) {
        try {
            return switch (path) {
                case UPDATE ->
                    outcome(jdbi.inTransaction(handle -> {
                        FencedUpdate update = FencedUpdate.builder(table)
                                .key(resource)
                                .setExpression("ids", "array_append(ids, CAST(:op AS BIGINT))")
                                .set("last_op", op)
                                .bind("op", op)
                                .build();
                        WriteOutcome outcome = writer.tryUpdate(handle, update, token);
                        if (outcome.isApplied()) {
                            point.reached(handle);
                        }
                        return outcome;
                    }));
                case UPSERT ->
                    outcome(jdbi.inTransaction(handle -> {
                        // without a handle the writer joins this thread's transaction, the one opened here
                        WriteOutcome outcome = writer.tryUpsert(
                                FencedUpsert.builder(table)
                                        .key(resource)
                                        .value("last_op", op)
                                        .build(),
                                token);
                        return appendIfApplied(handle, outcome, resource, op, point);
                    }));
                case BATCH ->
                    outcome(jdbi.inTransaction(handle -> {
                        FencedBatch batch = FencedBatch.builder(table)
                                .columns("last_op")
                                .add(token, RowKey.of(resource), op)
                                .build();
                        WriteOutcome outcome = writer.tryBatch(handle, batch).get(0);
                        return appendIfApplied(handle, outcome, resource, op, point);
                    }));
                case CLAIM -> {
                    try {
                        jdbi.useTransaction(handle -> writer.claimAndRun(table, RowKey.of(resource), token, claimed -> {
                            append(claimed, resource, op);
                            point.reached(claimed);
                            return null;
                        }));
                        yield WriteResult.applied();
                    } catch (StaleFenceException e) {
                        yield WriteResult.refused("claim rejected: " + e.getMessage());
                    }
                }
                case PLAIN ->
                    jdbi.inTransaction(handle -> {
                        if (append(handle, resource, op) == 0) {
                            return WriteResult.refused("no row " + resource);
                        }
                        point.reached(handle);
                        return WriteResult.applied();
                    });
            };
        } catch (RuntimeException e) {
            return WriteResult.indeterminate(e);
        }
    }

    private WriteOutcome appendIfApplied(
            Handle handle, WriteOutcome outcome, String resource, long op, TransactionPoint point) {
        if (outcome.isApplied()) {
            append(handle, resource, op);
            point.reached(handle);
        }
        return outcome;
    }

    private int append(Handle handle, String resource, long op) {
        return handle.execute(appendSql, op, op, resource);
    }

    private static WriteResult outcome(WriteOutcome outcome) {
        if (outcome instanceof WriteOutcome.Applied) {
            return WriteResult.applied();
        }
        if (outcome instanceof WriteOutcome.Rejected rejected) {
            return WriteResult.refused("rejected: stored token " + rejected.storedToken());
        }
        return WriteResult.refused(outcome.toString());
    }
}
