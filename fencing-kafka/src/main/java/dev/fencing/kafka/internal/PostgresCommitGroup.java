package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.WatermarkStoreException;
import dev.fencing.kafka.internal.RecordTransactions.GroupRecord;
import dev.fencing.kafka.internal.RecordTransactions.GroupWork;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A commit group of the key-parallel consumer in PostgreSQL ({@link RecordTransactions#applyGroup}), on the
 * tables of migrations V100 and V101: one transaction at READ COMMITTED that locks the group's keys in one
 * statement (creating the rows of new keys in a second one), runs the accepted records' handlers, and writes
 * every applied key's token and applied offset in one statement. Thread-safe: each call takes its own handle.
 */
final class PostgresCommitGroup {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresCommitGroup.class);

    /**
     * The group's first statement: READ COMMITTED (the row locks must be followed by reads of the latest
     * committed rows), then locks the rows of the group's keys that exist and reads them as the last transaction
     * to hold them left them. Each input row is one probe of the primary key (a lateral subquery has no join for
     * a generic plan to get wrong), taken in the arrays' order: every group sorts its keys alike, so two groups
     * wanting the same keys (a zombie's and the new owner's) queue rather than deadlock. Two statements in one
     * round trip, in the message that carries pgjdbc's {@code BEGIN}, as a record's own transaction does.
     */
    static final String LOCK_KEYS = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
            + " SELECT u.i, w.fence_token, w.applied_offset"
            + " FROM unnest(?::pg_catalog.text[], ?::pg_catalog.int4[], ?::pg_catalog.bytea[])"
            + " WITH ORDINALITY AS u(topic, kafka_partition, record_key, i)"
            + " CROSS JOIN LATERAL (SELECT fence_token, applied_offset FROM fencing.kafka_watermark w"
            + " WHERE w.consumer_group OPERATOR(pg_catalog.=) ? AND w.topic OPERATOR(pg_catalog.=) u.topic"
            + " AND w.kafka_partition OPERATOR(pg_catalog.=) u.kafka_partition"
            + " AND w.record_key OPERATOR(pg_catalog.=) u.record_key FOR UPDATE) AS w";

    /**
     * Creates the rows of the keys that had none, so that the group holds them too: a placeholder (token 1,
     * applied offset -1; the group decides as if there were no row) that nobody else sees before the group
     * commits its own values over it. A key another transaction created since {@link #LOCK_KEYS} inserts
     * nothing (after waiting for that transaction if it is still open): the count comes up short and the
     * group is rolled back and rerun record by record.
     */
    static final String CREATE_KEYS = "INSERT INTO fencing.kafka_watermark"
            + " (consumer_group, topic, kafka_partition, record_key, fence_token, applied_offset)"
            + " SELECT ?, u.topic, u.kafka_partition, u.record_key, 1, -1"
            + " FROM unnest(?::pg_catalog.text[], ?::pg_catalog.int4[], ?::pg_catalog.bytea[])"
            + " AS u(topic, kafka_partition, record_key)"
            + " ON CONFLICT DO NOTHING";

    /**
     * Writes every applied key's token and applied offset, one primary-key probe per key. Every row exists
     * and is the group's (locked or created by it), so the {@code WHERE} holds for each unless something wrote
     * a row the group holds, which it checks anyway: a shorter count rolls the group back (a stale token found
     * at commit). Never lowers a token.
     */
    static final String WRITE_KEYS = "INSERT INTO fencing.kafka_watermark"
            + " (consumer_group, topic, kafka_partition, record_key, fence_token, applied_offset)"
            + " SELECT ?, u.topic, u.kafka_partition, u.record_key, u.fence_token, u.applied_offset"
            + " FROM unnest(?::pg_catalog.text[], ?::pg_catalog.int4[], ?::pg_catalog.bytea[],"
            + " ?::pg_catalog.int8[], ?::pg_catalog.int8[])"
            + " AS u(topic, kafka_partition, record_key, fence_token, applied_offset)"
            + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
            + " SET fence_token = GREATEST(fencing.kafka_watermark.fence_token, EXCLUDED.fence_token),"
            + " applied_offset = EXCLUDED.applied_offset, updated_at = pg_catalog.now()"
            + " WHERE fencing.kafka_watermark.applied_offset OPERATOR(pg_catalog.<) EXCLUDED.applied_offset"
            + " AND fencing.kafka_watermark.fence_token OPERATOR(pg_catalog.<=) EXCLUDED.fence_token";

    /** Drops the placeholders of new keys none of whose records ran (the group's time ran out first). */
    static final String DROP_KEY = "DELETE FROM fencing.kafka_watermark"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ? AND record_key OPERATOR(pg_catalog.=) ?";

    private static final Comparator<Key> KEY_ORDER = Comparator.comparing((Key k) -> k.partition.topic())
            .thenComparingInt(k -> k.partition.partition())
            .thenComparing((a, b) -> Arrays.compareUnsigned(a.key, b.key)); // bytea's order

    private PostgresCommitGroup() {}

    /** One key of the group, with what the group read and raised. */
    private static final class Key {
        final TopicPartition partition;
        final byte[] key;
        boolean found; // had a row when locked (else the group created it)
        long token; // stored, then as raised by the group's records
        long applied = -1; // stored applied offset, then the group's last applied record's
        boolean written;

        Key(TopicPartition partition, byte[] key) {
            this.partition = partition;
            this.key = key;
        }
    }

    /** Rolls the group back to be rerun record by record; not a failure of the store. */
    private static final class Rerun extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Rerun(String why, Throwable cause) {
            super(why, cause, false, false);
        }
    }

    /** {@link RecordTransactions#applyGroup}. */
    static long[] apply(
            Jdbi jdbi,
            String groupId,
            List<GroupRecord> records,
            FencePolicy policy,
            long deadline,
            GroupWork<? super Handle> work) {
        Map<TopicPartition, Map<Bytes, Key>> byPartition = new HashMap<>();
        Key[] keyOf = new Key[records.size()];
        List<Key> keys = new ArrayList<>();
        for (int i = 0; i < keyOf.length; i++) {
            GroupRecord r = records.get(i);
            keyOf[i] = byPartition
                    .computeIfAbsent(r.partition(), p -> new HashMap<>())
                    .computeIfAbsent(Bytes.wrap(r.key()), k -> {
                        Key key = new Key(r.partition(), r.key());
                        keys.add(key);
                        return key;
                    });
        }
        keys.sort(KEY_ORDER);
        // The group's transaction runs once. Its keys keep what it read and raised, and its records' turns are the
        // caller's (GroupWork#start): a transaction handler that runs the callback again after a rollback (Jdbi's
        // SerializableTransactionRunner, on a serialization failure) would decide the records against what the
        // rolled-back attempt left in them. It is rolled back at once instead, and the group rerun record by record.
        boolean[] began = new boolean[1];
        try {
            return jdbi.inTransaction(handle -> {
                if (began[0]) {
                    throw new Rerun("the transaction handler ran the group's transaction again", null);
                }
                began[0] = true;
                return run(handle, groupId, records, keyOf, keys, policy, deadline, work);
            });
        } catch (Rerun e) {
            LOG.debug(
                    "group {}: a commit group of {} records rolled back, rerun record by record: {}",
                    groupId,
                    records.size(),
                    e.getCause() == null ? e.getMessage() : e.getCause().toString());
            return null;
        } catch (JdbiException | SQLException e) {
            // a lost connection too: each record, run alone, waits it out with the retry policy
            if (conflict(e) || TransientFailures.isTransient(e)) {
                LOG.debug(
                        "group {}: a commit group of {} records rolled back, rerun record by record: {}",
                        groupId,
                        records.size(),
                        e.toString());
                return null;
            }
            throw new WatermarkStoreException(
                    "could not apply a group of " + records.size() + " records for group " + groupId + ": "
                            + e.getMessage(),
                    e);
        }
    }

    private static long[] run(
            Handle handle,
            String groupId,
            List<GroupRecord> records,
            Key[] keyOf,
            List<Key> keys,
            FencePolicy policy,
            long deadline,
            GroupWork<? super Handle> work)
            throws SQLException {
        Connection connection = handle.getConnection();
        lock(connection, groupId, keys);
        List<Key> created = new ArrayList<>();
        for (Key key : keys) {
            if (!key.found) {
                created.add(key);
            }
        }
        if (!created.isEmpty()) {
            int inserted = withKeyArrays(connection, CREATE_KEYS, groupId, created, false);
            if (inserted != created.size()) {
                throw new Rerun((created.size() - inserted) + " new keys were created meanwhile", null);
            }
        }
        long[] outcomes = new long[records.size()];
        for (int i = 0; i < outcomes.length; i++) {
            if ((i > 0 && System.nanoTime() - deadline > 0) || !work.start(i)) {
                Arrays.fill(outcomes, i, outcomes.length, RecordTransactions.NOT_RUN);
                break;
            }
            GroupRecord record = records.get(i);
            Key key = keyOf[i];
            if (key.applied >= record.offset()) {
                outcomes[i] = RecordTransactions.APPLIED_BEFORE;
            } else if (!policy.admits(key.token, record.token())) {
                outcomes[i] = key.token;
                try {
                    work.refused(i, key.token);
                } catch (Throwable e) { // a dead letter that failed fails again when its record is rerun alone
                    throw new Rerun("a refusal failed", e);
                }
            } else {
                try {
                    work.run(handle, i);
                } catch (Throwable e) { // checked ones too; a real failure fails again when rerun alone
                    throw new Rerun("the handler failed", e);
                }
                key.token = Math.max(key.token, record.token());
                key.applied = record.offset();
                key.written = true;
                outcomes[i] = RecordTransactions.APPLIED;
            }
        }
        List<Key> written = new ArrayList<>();
        List<Key> unused = new ArrayList<>();
        for (Key key : keys) {
            if (key.written) {
                written.add(key);
            } else if (!key.found) {
                unused.add(key);
            }
        }
        if (!unused.isEmpty()) {
            drop(connection, groupId, unused);
        }
        if (!written.isEmpty()) {
            int updated = withKeyArrays(connection, WRITE_KEYS, groupId, written, true);
            if (updated != written.size()) {
                throw new Rerun((written.size() - updated) + " keys were written by another transaction", null);
            }
        }
        return outcomes;
    }

    private static void lock(Connection connection, String groupId, List<Key> keys) throws SQLException {
        String[] topics = new String[keys.size()];
        Integer[] partitions = new Integer[keys.size()];
        byte[][] bytes = new byte[keys.size()][];
        for (int i = 0; i < topics.length; i++) {
            Key key = keys.get(i);
            topics[i] = key.partition.topic();
            partitions[i] = key.partition.partition();
            bytes[i] = key.key;
        }
        Array topicArray = connection.createArrayOf("text", topics);
        Array partitionArray = connection.createArrayOf("int4", partitions);
        Array keyArray = connection.createArrayOf("bytea", bytes);
        try (PreparedStatement statement = connection.prepareStatement(LOCK_KEYS)) {
            statement.setArray(1, topicArray);
            statement.setArray(2, partitionArray);
            statement.setArray(3, keyArray);
            statement.setString(4, groupId);
            statement.execute(); // the SET's empty result first, then the rows of the keys that have one
            if (!statement.getMoreResults()) {
                throw new SQLException("the group's lock returned no result");
            }
            try (ResultSet rows = statement.getResultSet()) {
                while (rows.next()) {
                    Key key = keys.get((int) rows.getLong(1) - 1);
                    key.found = true;
                    key.token = rows.getLong(2);
                    key.applied = rows.getLong(3);
                }
            }
        } finally {
            topicArray.free();
            partitionArray.free();
            keyArray.free();
        }
    }

    /** Runs {@code sql} over {@code keys} (and, if {@code raised}, their tokens and applied offsets). */
    private static int withKeyArrays(Connection connection, String sql, String groupId, List<Key> keys, boolean raised)
            throws SQLException {
        String[] topics = new String[keys.size()];
        Integer[] partitions = new Integer[keys.size()];
        byte[][] bytes = new byte[keys.size()][];
        Long[] tokens = new Long[keys.size()];
        Long[] offsets = new Long[keys.size()];
        for (int i = 0; i < topics.length; i++) {
            Key key = keys.get(i);
            topics[i] = key.partition.topic();
            partitions[i] = key.partition.partition();
            bytes[i] = key.key;
            tokens[i] = key.token;
            offsets[i] = key.applied;
        }
        List<Array> arrays = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, groupId);
            arrays.add(connection.createArrayOf("text", topics));
            arrays.add(connection.createArrayOf("int4", partitions));
            arrays.add(connection.createArrayOf("bytea", bytes));
            if (raised) {
                arrays.add(connection.createArrayOf("int8", tokens));
                arrays.add(connection.createArrayOf("int8", offsets));
            }
            for (int i = 0; i < arrays.size(); i++) {
                statement.setArray(i + 2, arrays.get(i));
            }
            return statement.executeUpdate();
        } finally {
            for (Array array : arrays) {
                array.free();
            }
        }
    }

    /** Drops the placeholders in one batch (one round trip). */
    private static void drop(Connection connection, String groupId, List<Key> keys) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(DROP_KEY)) {
            for (Key key : keys) {
                statement.setString(1, groupId);
                statement.setString(2, key.partition.topic());
                statement.setInt(3, key.partition.partition());
                statement.setBytes(4, key.key);
                statement.addBatch();
            }
            statement.executeBatch();
        }
    }

    /** A serialization failure or a deadlock (SQLSTATE class 40): the group is rolled back and rerun. */
    private static boolean conflict(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql
                    && sql.getSQLState() != null
                    && sql.getSQLState().startsWith("40")) {
                return true;
            }
        }
        return false;
    }
}
