package dev.fencing.jdbc;

import dev.fencing.FencePolicy;
import dev.fencing.InvalidFenceTokenException;
import dev.fencing.jdbc.internal.DefaultFencedWriter;
import dev.fencing.jdbc.internal.MicrometerWriteCounters;
import dev.fencing.jdbc.internal.WriteCounters;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Objects;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;

/**
 * Writes that PostgreSQL applies only when they carry a fresh enough fence token. The fence check and the
 * write are ONE statement ({@code UPDATE ... WHERE key = :key AND last_fence_token < :token}), never a read
 * followed by a write, so a lock holder that paused (GC, page fault, SIGSTOP) past the end of its lease
 * cannot overwrite the work of the holder that came after it:
 *
 * <pre>
 *  holder A (token 7)   acquire ... [ 10 s GC pause ............ ] UPDATE stock ... token 7  -&gt; Rejected(8)
 *  lock service                  A's session expires -&gt; grant to B
 *  holder B (token 8)                          acquire, UPDATE stock ... token 8 -&gt; Applied
 * </pre>
 *
 * <pre>{@code
 * FencedWriter writer = FencedWriter.builder(jdbi).build();   // STRICT, no metrics
 * FencedTable inventory = FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
 * FencedUpdate reserve = FencedUpdate.builder(inventory).key("A-1")
 *         .setExpression("stock", "stock - :qty").where("stock >= :qty").bind("qty", 3).build();
 *
 * WriteOutcome outcome = writer.tryUpdate(reserve, lease.token()); // Applied, Rejected, NotFound, PredicateFailed
 *
 * writer.claimAndRun(inventory, RowKey.of("A-1"), lease.token(), handle -> {
 *     handle.execute("INSERT INTO reservation (sku, qty) VALUES (?, ?)", "A-1", 3);
 *     return null;                                  // claimed row and statements commit together
 * });
 * writer.advanceWatermarkAndRun("report:2024-06", lease.token(), handle -> {
 *     handle.execute("INSERT INTO report_line (report, line) VALUES (?, ?)", "2024-06", "...");
 *     return null;                                  // watermark and effect commit together
 * });
 * }</pre>
 *
 * <p><b>Transactions.</b> A method that takes a {@link Handle} runs on it, inside its transaction if one is
 * open. A method without one runs on this thread's handle as Jdbi hands it out: inside the caller's {@code
 * jdbi.useTransaction(...)} / {@code inTransaction(...)} that is the caller's handle, and the write joins
 * the caller's transaction (it commits or rolls back with it; nothing is committed separately). Outside
 * one, a single-row write runs as auto-committed statements; a batch runs first as one auto-committed
 * statement that writes every row or fails and writes none, and only when it did not write every row as a
 * transaction of its own; {@link #claimAndRun} and {@link #advanceWatermarkAndRun} open a transaction of
 * their own and commit it. {@link #batch} is all or nothing in both cases: in a caller's transaction it
 * writes under a savepoint and rolls back to it when a row is not applied, leaving the caller's
 * transaction usable.
 *
 * <p>Every method refuses a token {@code <= 0} with {@link InvalidFenceTokenException} before any SQL
 * runs. The {@code try...} methods return a {@link WriteOutcome}; their twins throw the matching {@link
 * FencedJdbcException}. Database failures surface as {@link FencedWriteException}.
 *
 * <p><b>What is fenced.</b> Only what the database commits in the same transaction as the fenced write. A
 * watermark advanced in one transaction and an external resource touched afterwards is check-then-act: a
 * holder that paused between the two still touches the resource after the next holder. Use {@link
 * #advanceWatermarkAndRun} (or {@link #tryAdvanceWatermark} on your transaction's handle) for effects in
 * the same database, and make a resource outside it check the token itself.
 *
 * <p>How a single-row write runs: first as the bare fenced statement, whose update count says whether it
 * applied (the common case, at the cost of a plain UPDATE). Only when it wrote nothing does the writer
 * run the fenced write once more as ONE statement that also reports why: the row's token and whether the
 * extra predicate held, read from that statement's snapshot. Every attempt is a complete fenced write, so
 * the second may apply if the row changed in between, which is as correct as the first applying. If that
 * snapshot admits the token yet the write did not apply (a transaction committed a change to the row while
 * the statement ran), the reporting statement is run again, up to a few times, so the outcome is truthful.
 * The decision to write is always the database's, made under the row lock; nothing is read before a
 * write. A batch outside a caller's transaction runs first as the bare fenced UPDATE of all its rows,
 * which commits only when it wrote as many rows as the batch has, under a unique index on the key columns
 * (so that each input row wrote exactly one row, a different one), found once per table by the check
 * {@link FencedTable} makes and confirmed by each statement itself;
 * otherwise the statement fails on purpose, so that PostgreSQL undoes it. The batch then runs again, in a
 * transaction of its own, as one statement that writes and reports the rows it did not write, and that
 * fails (undoing itself: {@link FencedWriteException}) when a key matched two rows or two of the batch's
 * keys name one row ({@code '7'} and {@code 7L} for a number). The first failure is an error in the
 * server's log, one per batch not written whole: {@code invalid input syntax for type bigint: "fenced batch
 * wrote 999 rows for 1000 keys; rolled back"}. In a caller's transaction {@link #tryBatch} runs only the
 * reporting statement; a transaction open on the connection (pgjdbc says so) counts as the caller's even
 * when the handle's transaction handler did not begin it.
 *
 * <p>Writes assume PostgreSQL's default READ COMMITTED isolation: a fenced UPDATE that meets a row another
 * transaction is changing waits for it and then re-checks the fence against the committed row. Under
 * REPEATABLE READ or SERIALIZABLE the database reports a serialization failure instead ({@link
 * FencedWriteException}), which the caller retries as usual.
 *
 * <p>Thread-safe; one writer per {@link Jdbi} is enough. Rejections are logged at DEBUG with the table,
 * key and tokens; with a {@link Builder#meterRegistry} it also counts {@code fencing.jdbc.writes} tagged
 * with {@code table} and {@code outcome} (applied, rejected, not_found, predicate_failed).
 */
public interface FencedWriter {

    static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    FencePolicy policy();

    /** Runs the update on this thread's handle (see Transactions above) and reports what happened. */
    WriteOutcome tryUpdate(FencedUpdate update, long token);

    /** Runs the update on the caller's handle (and inside the caller's transaction, if one is open). */
    WriteOutcome tryUpdate(Handle handle, FencedUpdate update, long token);

    /**
     * @throws StaleFenceException when a newer token is stored
     * @throws FencedRowNotFoundException when no row has the key
     * @throws FencePredicateFailedException when an extra predicate was false
     */
    void update(FencedUpdate update, long token);

    /** Inserts the row with the token, or updates it if the policy admits the token. */
    WriteOutcome tryUpsert(FencedUpsert upsert, long token);

    /** @throws StaleFenceException when the row exists with a token the policy does not let this one overwrite */
    void upsert(FencedUpsert upsert, long token);

    /**
     * Runs every row of the batch in one statement; outcomes in the order rows were added, as an
     * unmodifiable list. Each row is
     * applied or not on its own. If it throws, outside a caller's transaction nothing was written; inside
     * one, rows may have been written in it (Jdbi's {@code inTransaction} rolls back when the exception
     * leaves it).
     */
    List<WriteOutcome> tryBatch(FencedBatch batch);

    /** Like {@link #tryBatch(FencedBatch)}, on the caller's handle (and transaction, if one is open). */
    List<WriteOutcome> tryBatch(Handle handle, FencedBatch batch);

    /**
     * All or nothing: every row is applied, or none is and the exception for the first row that was not
     * applied is thrown. Outside a caller's transaction it commits its own; inside one, a savepoint undoes
     * the batch's rows alone and the caller's transaction goes on.
     */
    void batch(FencedBatch batch);

    /**
     * Claims a row on the caller's handle: a fenced UPDATE that only sets the fence column to the token,
     * locking the row until the caller's transaction ends. Needs an open transaction.
     *
     * @throws IllegalStateException when the handle is not in a transaction
     */
    WriteOutcome tryClaim(Handle handle, FencedTable table, RowKey key, long token);

    /**
     * Claim-then-run: claims the row (fenced UPDATE of its fence column, which also locks it), then runs
     * the callback's statements on the same handle in the same transaction. On this thread's handle: inside
     * a caller's transaction it joins that transaction and commits nothing itself; otherwise it opens a
     * transaction and commits it. A statement of the writer's inside the callback uses the same handle, so
     * it does not wait on the claim's own row lock. If the claim is refused nothing runs and the matching
     * exception is thrown; if the callback throws, or the connection dies, the claim and the callback's
     * statements are rolled back (in a caller's transaction, when the exception leaves it). A competing
     * holder with a higher token waits for the row lock and wins after this commits; one with a lower token
     * is refused. Exceptions of the callback propagate unchanged.
     *
     * <p>Under {@link FencePolicy#STRICT} a token claims a row once; use {@link FencePolicy#MONOTONIC} to
     * run several transactions under one grant. The claim has already written the token, so under STRICT a
     * fenced write of the claimed row under the same token inside the callback is {@link
     * WriteOutcome.Rejected}: change the claimed row with the handle's own statements (the row is locked and
     * fenced until the transaction ends), or use MONOTONIC.
     */
    <R, X extends Exception> R claimAndRun(FencedTable table, RowKey key, long token, HandleCallback<R, X> callback)
            throws X;

    /**
     * Advances the watermark of {@code resourceKey} ({@code fencing.watermark}: inserts it or raises it to
     * the token, if the policy admits it) and, only if it advanced, runs {@code effect} on the same handle
     * in the same transaction, so that the effect commits with the watermark or not at all. A holder whose
     * token is overtaken while it is paused is refused at the watermark, before its effect runs, or, if it
     * advanced first, holds the watermark row locked until it commits and the next holder's advance
     * waits for it. Transactions and exceptions as for {@link #claimAndRun}.
     *
     * <p>Only statements in {@code effect} are fenced. Touching a resource outside the database after this
     * returns is not: a pause between the two lets a stale holder act after the next one.
     *
     * @throws StaleFenceException when the watermark holds a token the policy does not let this one overwrite
     */
    <R, X extends Exception> R advanceWatermarkAndRun(String resourceKey, long token, HandleCallback<R, X> effect)
            throws X;

    /**
     * Advances the watermark on the caller's handle, inside its transaction: the caller's statements in the
     * same transaction are fenced with it. Prefer {@link #advanceWatermarkAndRun}.
     *
     * @throws IllegalStateException when the handle has no open transaction: the watermark would commit
     *     alone and the statements after it would run unfenced (check-then-act)
     */
    WriteOutcome tryAdvanceWatermark(Handle handle, String resourceKey, long token);

    /** Options for a {@link FencedWriter}; every setter checks its value. */
    final class Builder {
        private final Jdbi jdbi;
        private FencePolicy policy = FencePolicy.STRICT;
        private WriteCounters counters = WriteCounters.NONE;

        private Builder(Jdbi jdbi) {
            this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        }

        /** Default {@link FencePolicy#STRICT}. */
        public Builder policy(FencePolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * Counts outcomes in this registry. Micrometer is an optional dependency of fencing-jdbc: add
         * {@code io.micrometer:micrometer-core} to use it.
         */
        public Builder meterRegistry(MeterRegistry registry) {
            this.counters = MicrometerWriteCounters.create(Objects.requireNonNull(registry, "registry"));
            return this;
        }

        public FencedWriter build() {
            return new DefaultFencedWriter(jdbi, policy, counters);
        }
    }
}
