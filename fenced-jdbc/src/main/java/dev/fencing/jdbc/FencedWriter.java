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
 * WriteOutcome outcome = writer.tryUpdate(reserve, lease.token());   // Applied, Rejected, NotFound, PredicateFailed
 * writer.update(reserve, lease.token());                             // or: throws StaleFenceException, ...
 *
 * writer.claimAndRun(inventory, RowKey.of("A-1"), lease.token(), handle -> {
 *     handle.execute("INSERT INTO reservation (sku, qty) VALUES (?, ?)", "A-1", 3);
 *     return null;                                  // claimed row and statements commit together
 * });
 * writer.advanceWatermark("s3://bucket/report.csv", lease.token());
 * }</pre>
 *
 * <p>Every method refuses a token {@code <= 0} with {@link InvalidFenceTokenException} before any SQL
 * runs. The {@code try...} methods return a {@link WriteOutcome}; their twins throw the matching {@link
 * FencingJdbcException}. Database failures surface as {@link FencedWriteException}.
 *
 * <p>How a single-row write runs: first as the bare fenced statement, whose update count says whether it
 * applied (the common case, at the cost of a plain UPDATE). Only when it wrote nothing does the writer
 * run the fenced write once more as ONE statement that also reports why: the row's token and whether the
 * extra predicate held, read from that statement's snapshot. Every attempt is a complete fenced write, so
 * the second may apply if the row changed in between, which is as correct as the first applying. If that
 * snapshot admits the token yet the write did not apply (a transaction committed a change to the row while
 * the statement ran), the reporting statement is run again, up to a few times, so the outcome is truthful.
 * The decision to write is always the database's, made under the row lock; nothing is read before a
 * write. A batch in the writer's own transaction ({@link #tryBatch(FencedBatch)}, {@link #batch}) runs first
 * as the bare fenced UPDATE of all its rows; when its update count says every row was written, it commits.
 * Otherwise that transaction is rolled back and the batch runs again, in a new one, as one statement that
 * writes and reports the rows it did not write. On the caller's handle only the reporting statement runs.
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

    /** Runs the update in its own transaction and reports what happened. */
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

    /** Runs every row of the batch in one statement; outcomes in the order rows were added. */
    List<WriteOutcome> tryBatch(FencedBatch batch);

    /** Like {@link #tryBatch(FencedBatch)}, on the caller's handle (and transaction, if one is open). */
    List<WriteOutcome> tryBatch(Handle handle, FencedBatch batch);

    /**
     * All or nothing: runs the batch in a transaction and commits only if every row applied; otherwise
     * rolls back and throws for the first row that did not apply.
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
     * Claim-then-run: opens a transaction, claims the row (fenced UPDATE of its fence column, which also
     * locks it), then runs the callback's statements in the same transaction, and commits. If the claim is
     * refused nothing runs and the matching exception is thrown; if the callback throws, or the connection
     * dies, everything (the claim included) is rolled back. A competing holder with a higher token waits
     * for the row lock and wins after this commits; one with a lower token is refused. Exceptions of the
     * callback propagate unchanged.
     *
     * <p>Under {@link FencePolicy#STRICT} a token claims a row once; use {@link FencePolicy#MONOTONIC} to
     * run several transactions under one grant.
     */
    <R, X extends Exception> R claimAndRun(FencedTable table, RowKey key, long token, HandleCallback<R, X> callback)
            throws X;

    /**
     * Advances the watermark of a resource that is not a row ({@code fencing.watermark}): inserts it or
     * raises it to the token, if the policy admits it. Use its outcome to decide whether to touch the
     * resource; for a resource that can be changed in the same transaction, use the handle variant.
     */
    WriteOutcome tryAdvanceWatermark(String resourceKey, long token);

    WriteOutcome tryAdvanceWatermark(Handle handle, String resourceKey, long token);

    /** @throws StaleFenceException when the watermark holds a token the policy does not let this one overwrite */
    void advanceWatermark(String resourceKey, long token);

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
         * Counts outcomes in this registry. Micrometer is an optional dependency of fenced-jdbc: add
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
