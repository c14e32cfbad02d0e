package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.WatermarkStoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

/**
 * {@code PostgresWatermarkStore}'s transaction per record for the key-parallel consumer ({@link
 * RecordTransactions}), on the tables of migrations V100 and V101. Thread-safe: each call takes its own handle
 * from Jdbi.
 */
public final class PostgresRecordTransactions implements RecordTransactions<Handle> {
    /**
     * The key-parallel consumer's per-record transaction, its first statements: READ COMMITTED (as the store's
     * units: the row lock must be followed by a read of the latest committed row); the key's row created if it
     * has none, as a placeholder (token 1, applied offset -1; decided as if there were no row) that nobody else
     * sees before this transaction commits its own values over it, so that this transaction holds a new key
     * too, and a second transaction for it (a zombie's and the new owner's for one record) waits on the insert
     * instead of running its handler beside this one's; then the key's stored watermark and applied offset,
     * locked for the rest of the transaction. An insert that meets a row inserts nothing, after waiting for
     * the transaction that inserted it, if still open; {@code FOR UPDATE} waits for a transaction holding the
     * row and then reads the row as that one left it. Three statements in one round trip, in the message that
     * carries pgjdbc's {@code BEGIN}.
     */
    static final String LOCK_KEY = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
            + " INSERT INTO fencing.kafka_watermark"
            + " (consumer_group, topic, kafka_partition, record_key, fence_token, applied_offset)"
            + " VALUES (?, ?, ?, ?, 1, -1) ON CONFLICT DO NOTHING;"
            + " SELECT fence_token, applied_offset FROM fencing.kafka_watermark"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ? AND record_key OPERATOR(pg_catalog.=) ? FOR UPDATE";

    /**
     * Raises one key's watermark with the offset of the record applied, after the handler ran in the same
     * transaction, on the row {@link #LOCK_KEY} locked or created. It updates only a row with a lower applied
     * offset and a token this one still passes ({@code %s}: the policy's comparison; against a placeholder,
     * always {@code <=}), which the lock makes certain; a count other than 1 rolls the transaction back to be
     * decided again. Also what tells a transaction the handler's own failed statement aborted (a handler that
     * caught the failure and returned): this statement fails in it, where a {@code COMMIT} would roll it back
     * without a word from pgjdbc.
     */
    private static final String APPLY_KEY = "INSERT INTO fencing.kafka_watermark"
            + " (consumer_group, topic, kafka_partition, record_key, fence_token, applied_offset)"
            + " VALUES (?, ?, ?, ?, ?, ?)"
            + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
            + " SET fence_token = GREATEST(fencing.kafka_watermark.fence_token, EXCLUDED.fence_token),"
            + " applied_offset = EXCLUDED.applied_offset, updated_at = pg_catalog.now()"
            + " WHERE fencing.kafka_watermark.applied_offset OPERATOR(pg_catalog.<) EXCLUDED.applied_offset"
            + " AND fencing.kafka_watermark.fence_token %s EXCLUDED.fence_token";

    private static final String APPLY_KEY_MONOTONIC = String.format(APPLY_KEY, "OPERATOR(pg_catalog.<=)");
    private static final String APPLY_KEY_STRICT = String.format(APPLY_KEY, "OPERATOR(pg_catalog.<)");

    private final Jdbi jdbi;

    public PostgresRecordTransactions(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    @Override
    public long applyOnce(
            String groupId,
            TopicPartition partition,
            byte[] key,
            long offset,
            long token,
            FencePolicy policy,
            Consumer<? super Handle> work) {
        while (true) {
            try {
                return jdbi.inTransaction(
                        handle -> applyOnceIn(handle, groupId, partition, key, offset, token, policy, work));
            } catch (WorkFailed e) {
                // the handler's own failure, rolled back with its transaction: thrown as it is, not as the store's
                Throwable cause = e.getCause();
                if (cause instanceof Error error) {
                    throw error;
                }
                if (cause instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new RecordHandlingException(partition, offset, token, cause); // a sneaky checked one
            } catch (KeyRaced e) {
                // the key's row went away under the lock, or changed although locked: rolled back, decided
                // again against what is stored now
            } catch (JdbiException | SQLException e) {
                throw new WatermarkStoreException(
                        "could not apply " + partition + " offset " + offset + " for group " + groupId + ": "
                                + e.getMessage(),
                        e);
            }
        }
    }

    private static long applyOnceIn(
            Handle handle,
            String groupId,
            TopicPartition partition,
            byte[] key,
            long offset,
            long token,
            FencePolicy policy,
            Consumer<? super Handle> work)
            throws SQLException {
        Connection connection = handle.getConnection();
        long stored = 0;
        boolean created;
        try (PreparedStatement statement = connection.prepareStatement(LOCK_KEY)) {
            bindKey(statement, 1, groupId, partition, key);
            bindKey(statement, 5, groupId, partition, key);
            statement.execute(); // the SET's empty result, the insert's count, then the key's row
            if (statement.getMoreResults()) {
                throw new SQLException("the key's placeholder insert returned rows");
            }
            created = statement.getUpdateCount() == 1;
            if (!statement.getMoreResults()) {
                throw new SQLException("the key's lock returned no result");
            }
            try (ResultSet rows = statement.getResultSet()) {
                if (!rows.next()) {
                    throw new KeyRaced(); // deleted between the insert and the lock: decided again
                }
                if (!created) {
                    stored = rows.getLong(1);
                    if (rows.getLong(2) >= offset) {
                        return APPLIED_BEFORE;
                    }
                }
            }
        }
        if (!policy.admits(stored, token)) {
            return stored;
        }
        try {
            work.accept(handle);
        } catch (Throwable e) { // checked ones too, from a handler that throws them sneakily
            throw new WorkFailed(e);
        }
        try (PreparedStatement statement = connection.prepareStatement(
                policy == FencePolicy.STRICT && !created ? APPLY_KEY_STRICT : APPLY_KEY_MONOTONIC)) {
            bindKey(statement, 1, groupId, partition, key);
            statement.setLong(5, token);
            statement.setLong(6, offset);
            if (statement.executeUpdate() != 1) {
                throw new KeyRaced();
            }
        }
        return APPLIED;
    }

    /** A commit group's transaction: {@link PostgresCommitGroup}. */
    @Override
    public long[] applyGroup(
            String groupId,
            List<GroupRecord> records,
            FencePolicy policy,
            long deadline,
            GroupWork<? super Handle> work) {
        return PostgresCommitGroup.apply(jdbi, groupId, records, policy, deadline, work);
    }

    /** Carries the work's failure through Jdbi's rollback, so that it is not taken for the store's. */
    private static final class WorkFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        WorkFailed(Throwable cause) {
            super(cause.toString(), cause, false, false);
        }
    }

    /** Rolls back a record's transaction that lost its key's row to another (a delete meanwhile, say). */
    private static final class KeyRaced extends RuntimeException {
        private static final long serialVersionUID = 1L;

        KeyRaced() {
            super("the key's row changed under its lock", null, false, false);
        }
    }

    private static void bindKey(
            PreparedStatement statement, int first, String groupId, TopicPartition partition, byte[] key)
            throws SQLException {
        statement.setString(first, groupId);
        statement.setString(first + 1, partition.topic());
        statement.setInt(first + 2, partition.partition());
        statement.setBytes(first + 3, key);
    }
}
