package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencePolicy;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.PointGate;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.lock.Lease;
import java.util.Random;
import org.jdbi.v3.core.Jdbi;

/**
 * The read/write-lock resource's operations, under each resource's {@code FencedReadWriteLock}: two in three are
 * reads under the read lock, the others writes under the write lock. A write appends the operation's id to the
 * resource's row under the write token (fencing-jdbc, STRICT, on one of four paths, or a plain UPDATE in the
 * control run). A read reads how many ids the row's list holds and, in the fenced run, the row's stored token; then
 * (where the {@link PausePoint#READ_USE} point lies) it decides whether to return what it read.
 *
 * <p>How the read token detects a stale read. A read token is at least the token of every write granted before
 * the read and less than that of every write granted after it, and the fenced row stores the token of the last
 * write it accepted. Just before it returns, the fenced reader reads the stored token again and discards its read
 * (a {@code fail}) when that token is above its read token (a writer granted after the read has written: the read
 * lock was lost, a pause or a partition outlived the session) or differs from the one it read with the list (a
 * write landed between the two looks: a paused ex-writer's late write, whose token is below the read token, which
 * the write fence accepts since no later writer had written). Every accepted fenced write raises the stored token
 * in the transaction that appends, so a read that passes both tests saw every write committed before its second
 * look. The control run's reader returns what it read without looking again.
 *
 * <p>Not thread-safe: one writer thread.
 */
final class RwLockWrites implements WriterWorkload<RwLockWrites.Plan> {
    /**
     * One operation's choices.
     *
     * @param read a read under the read lock, else a write under the write lock
     * @param path how a write is written
     */
    record Plan(boolean read, WritePath path) {}

    private final boolean fenced;
    private final String schema;
    private final HistoryWriter history;
    private final CoordinatorLink link;
    private final PointGate<PausePoint> gate;
    private final HikariDataSource dataSource;
    private Jdbi jdbi;
    private ResourceWriter writer;

    /**
     * Arguments: {@code jdbcUrl}, {@code jdbcUser}, {@code schema}; the JDBC password from {@value
     * WriterMain#PASSWORD_ENV}.
     */
    RwLockWrites(
            ChildArguments args,
            int client,
            boolean fenced,
            HistoryWriter history,
            CoordinatorLink link,
            PointGate<PausePoint> gate) {
        this.fenced = fenced;
        this.schema = args.text("schema");
        this.history = history;
        this.link = link;
        this.gate = gate;
        this.dataSource = ResourceWriter.pool(args, client);
    }

    @Override
    public void connect() {
        jdbi = Jdbi.create(dataSource);
        // STRICT: each write grant writes the row once
        writer = fenced ? ResourceWriter.fenced(jdbi, schema, FencePolicy.STRICT) : ResourceWriter.plain(jdbi, schema);
        jdbi.useHandle(handle -> handle.execute("SELECT 1"));
    }

    @Override
    public Plan plan(Random random) {
        boolean read = random.nextInt(3) < 2;
        return new Plan(read, fenced ? WritePath.fenced(random) : WritePath.PLAIN);
    }

    @Override
    public LockKind lockKind(Plan plan) {
        return plan.read() ? LockKind.READ : LockKind.WRITE;
    }

    @Override
    public void operate(Lease lease, String resource, long op, Plan plan) {
        if (plan.read()) {
            read(resource, op, lease.token());
        } else {
            write(resource, op, lease.token(), plan.path());
        }
    }

    private void write(String resource, long op, long token, WritePath path) {
        history.invokeAppend(op, resource, token, path.label());
        link.emit("LOCKED", resource, token);
        gate.pass(PausePoint.LOCK_WRITE, () -> link.emit("POINT", PausePoint.LOCK_WRITE, resource, token, 0));
        WriteResult result = writer.append(path, resource, op, token, handle -> {});
        switch (result.kind()) {
            case APPLIED -> {
                history.okAppend(op, resource, token);
                link.emit("WRITTEN", resource, token);
            }
            case REFUSED -> {
                history.failAppend(op, resource, token, result.detail());
                link.emit("REFUSED", resource, token);
            }
            case INDETERMINATE -> {
                history.infoAppend(op, resource, token, result.detail());
                link.emit("UNKNOWN", resource, token);
            }
        }
    }

    /** How many ids the row's list held, and its stored token (0 in the control run, whose rows store none). */
    private record Look(int seen, long stored) {}

    private void read(String resource, long op, long token) {
        history.invokeRead(op, resource, token);
        link.emit("LOCKED", resource, token);
        try {
            Look look = look(resource);
            gate.pass(PausePoint.READ_USE, () -> link.emit("POINT", PausePoint.READ_USE, resource, token, 0));
            long time = System.currentTimeMillis();
            if (fenced) {
                long stored = look(resource).stored();
                if (stored > token || stored != look.stored()) {
                    history.failRead(
                            op,
                            resource,
                            token,
                            time,
                            stored > token
                                    ? "stale: stored token " + stored + " above the read token"
                                    : "stale: stored token went from " + look.stored() + " to " + stored
                                            + " during the read");
                    link.emit("REFUSED", resource, token);
                    return;
                }
            }
            history.okRead(op, resource, token, time, look.seen());
            link.emit("READ", resource, token);
        } catch (RuntimeException e) {
            history.infoRead(op, resource, token, WriteResult.indeterminate(e).detail());
            link.emit("UNKNOWN", resource, token);
        }
    }

    private Look look(String resource) {
        String sql = "SELECT cardinality(ids), " + (fenced ? FencedTable.DEFAULT_FENCE_COLUMN : "0") + " FROM " + schema
                + ".resources WHERE resource = ?";
        return jdbi.withHandle(handle -> handle.createQuery(sql)
                .bind(0, resource)
                .map((rows, context) -> new Look(rows.getInt(1), rows.getLong(2)))
                .one());
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
