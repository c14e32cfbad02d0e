package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencePredicateFailedException;
import dev.fencing.jdbc.FencedJdbcException;
import dev.fencing.jdbc.FencedRowNotFoundException;
import dev.fencing.jdbc.FencedWriteException;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.StaleFenceException;
import dev.fencing.jdbc.WriteOutcome;
import java.util.function.Supplier;
import org.jdbi.v3.core.JdbiException;

/** The exceptions of the throwing twins and of database failures, from outcomes and Jdbi's exceptions. */
final class OutcomeExceptions {
    private OutcomeExceptions() {}

    /** Throws the exception that matches a write not applied; returns quietly for {@code Applied}. */
    static void throwUnlessApplied(String table, RowKey key, WriteOutcome outcome, FencePolicy policy) {
        if (outcome instanceof WriteOutcome.Rejected rejected) {
            throw new StaleFenceException(table, key, rejected.storedToken(), rejected.offeredToken(), policy);
        } else if (outcome instanceof WriteOutcome.NotFound) {
            throw new FencedRowNotFoundException(table, key, outcome.offeredToken());
        } else if (outcome instanceof WriteOutcome.PredicateFailed failed) {
            throw new FencePredicateFailedException(table, key, failed.storedToken(), outcome.offeredToken());
        }
    }

    /** Runs {@code work}, turning a Jdbi failure into a {@link FencedWriteException} naming the write. */
    static <T> T guarded(String table, RowKey key, long token, Supplier<T> work) {
        try {
            return work.get();
        } catch (FencedJdbcException e) {
            throw e;
        } catch (JdbiException e) {
            throw failed(table, key, token, e);
        }
    }

    static FencedWriteException failed(String table, RowKey key, long token, JdbiException e) {
        return new FencedWriteException(
                "fenced write to " + table + (key == null ? "" : " key " + key)
                        + (token > 0 ? " under token " + token : "") + " failed: " + e.getMessage(),
                table,
                key,
                token,
                e);
    }

    static FencedWriteException changedConcurrently(String table, RowKey key, long token, int attempts) {
        return new FencedWriteException(
                "fenced write to " + table + " key " + key + " under token " + token + " wrote nothing in "
                        + attempts + " attempts although the row admitted the token each time: either the row"
                        + " changed concurrently during each attempt, or a BEFORE trigger that returns"
                        + " NULL (or a row-level security policy) skips the row; nothing was written",
                table,
                key,
                token,
                null);
    }
}
