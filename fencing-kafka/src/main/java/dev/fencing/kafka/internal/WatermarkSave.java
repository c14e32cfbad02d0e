package dev.fencing.kafka.internal;

import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import java.lang.reflect.Method;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How {@code PostgresWatermarkStore} saves a unit of work in the unit's transaction: the partitions' next
 * offsets in {@code fencing.kafka_offset} (a compare-and-set each) and the raised watermarks in {@code
 * fencing.kafka_watermark} (an update of the known keys, then an insert of the new ones), and how it reads a
 * partition's stored offset. Every type, function and operator is named with its schema (see the store). Static
 * and stateless: thread-safe.
 */
public final class WatermarkSave {
    // the store's own logger: what a save logs is the store's, and users set its level by that name
    private static final Logger LOG = LoggerFactory.getLogger("dev.fencing.kafka.PostgresWatermarkStore");

    private static final String LOAD_OFFSET = "SELECT next_offset FROM fencing.kafka_offset"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ?";

    private static final String INSERT_OFFSET = "INSERT INTO fencing.kafka_offset"
            + " (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE_OFFSET =
            "UPDATE fencing.kafka_offset SET next_offset = ?, updated_at = pg_catalog.now()"
                    + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
                    + " AND kafka_partition OPERATOR(pg_catalog.=) ? AND next_offset OPERATOR(pg_catalog.=) ?";
    /**
     * For the rest of the transaction: joins only by nested loops, inner scans only through an index, and no JIT
     * compilation. A save's statements are planned for each unit's arrays, and their estimated cost grows with
     * the keys (about 100,000 for 10,000 keys): past {@code jit_above_cost} (100,000 by default) a server built
     * with LLVM, as Debian's and most packaged servers are, compiled the known keys' update before running it
     * (measured on PostgreSQL 15: 28 ms for 10,000 keys, and past {@code jit_inline_above_cost}, 500,000, several
     * hundred more), to save microseconds on a statement that does one index probe per key.
     */
    public static final String PROBE_JOINS_ONLY = "SELECT"
            + " pg_catalog.set_config('enable_hashjoin', 'off', true) AS hash_joins,"
            + " pg_catalog.set_config('enable_mergejoin', 'off', true) AS merge_joins,"
            + " pg_catalog.set_config('enable_seqscan', 'off', true) AS sequential_scans,"
            + " pg_catalog.set_config('jit', 'off', true) AS jit";

    /**
     * {@link #UPDATE_KNOWN_WATERMARKS} without its settings. Each input row finds its key's row through a
     * subquery that can only probe the primary key (all four columns are bound per row), and the update reaches
     * that row by its {@code ctid}: a nested loop over the input with a TID scan, nothing left for the planner
     * to hash or to scan once per input row.
     */
    public static final String UPDATE_KNOWN = "UPDATE fencing.kafka_watermark AS w"
            + " SET fence_token = s.fence_token, updated_at = pg_catalog.now()"
            + " FROM (SELECT o.fence_token, o.i, (SELECT k.ctid FROM fencing.kafka_watermark AS k"
            + " WHERE k.consumer_group OPERATOR(pg_catalog.=) ? AND k.topic OPERATOR(pg_catalog.=) o.topic"
            + " AND k.kafka_partition OPERATOR(pg_catalog.=) o.kafka_partition"
            + " AND k.record_key OPERATOR(pg_catalog.=) o.record_key) AS row_id"
            + " FROM unnest(?::pg_catalog.text[], ?::pg_catalog.int4[], ?::pg_catalog.bytea[],"
            + " ?::pg_catalog.int8[]) WITH ORDINALITY"
            + " AS o(topic, kafka_partition, record_key, fence_token, i)) AS s"
            + " WHERE w.ctid OPERATOR(pg_catalog.=) s.row_id AND w.fence_token OPERATOR(pg_catalog.<) s.fence_token"
            + " RETURNING s.i";

    /**
     * A save's first step: raises the watermarks of the keys the table already holds, for all of a unit's
     * partitions in one statement, and returns the ordinal (from 1) of each input row it raised. An upsert
     * ({@link #RAISE_WATERMARKS}) first locks each existing row (a WAL record and a dirtied page of its own) and
     * then updates it, and even {@code ON CONFLICT DO NOTHING} costs a speculative probe per key; a raise of a
     * known key is the common case, so here it is one plain update of the row, HOT with the V102 layout
     * (fillfactor 50). The {@code WHERE} keeps a stored token that is already as high: a save never lowers a
     * watermark, and a key it does not raise is not rewritten. A row another transaction updated meanwhile has
     * moved ({@code ctid}) and is left to the second step. Parameters: the group, then the topics, partitions,
     * keys and tokens as four arrays of one element per key.
     *
     * <p>The work must be one probe of the primary key per input row. Left to its costs PostgreSQL hashes the
     * table (or the group's whole key set) instead, 3x slower for 2,000 of 10,000 keys, and where statistics
     * say a group is small it scans the group once per input row (measured: 2.2 s for a unit of 2,000 new keys
     * once the group held 4,000; an earlier form of this statement, cached generic, took seconds per unit). So
     * the statement before it, in the same round trip, turns hash and merge joins, sequential scans and JIT
     * compilation off for the rest of the transaction, in which only this save and COMMIT follow; and the store sends both unnamed
     * ({@link #unnamed}), planned for each execution's arrays.
     */
    static final String UPDATE_KNOWN_WATERMARKS = PROBE_JOINS_ONLY + "; " + UPDATE_KNOWN;

    /**
     * The insert {@link #RAISE_WATERMARKS} and {@link #INSERT_NEW_WATERMARKS} share: the group, then the topics,
     * partitions, keys and tokens as four arrays of one element per key.
     */
    private static final String INSERT_KEYS = "INSERT INTO fencing.kafka_watermark"
            + " (consumer_group, topic, kafka_partition, record_key, fence_token)"
            + " SELECT ?, u.topic, u.kafka_partition, u.record_key, u.fence_token"
            + " FROM unnest(?::pg_catalog.text[], ?::pg_catalog.int4[], ?::pg_catalog.bytea[],"
            + " ?::pg_catalog.int8[])"
            + " AS u(topic, kafka_partition, record_key, fence_token)";

    /**
     * A save's second step, for the keys {@link #UPDATE_KNOWN_WATERMARKS} did not raise (new keys, mostly;
     * sent only if there are any). Each input row is one probe of the primary key, whatever plan PostgreSQL
     * caches for the statement: it has no join for a generic plan to get wrong. A key another transaction
     * inserted meanwhile, or whose stored token is already as high, meets the {@code ON CONFLICT} arm, whose
     * {@code WHERE} keeps a stored token that is already as high: a save never lowers a watermark.
     */
    public static final String RAISE_WATERMARKS = INSERT_KEYS
            + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
            + " SET fence_token = EXCLUDED.fence_token, updated_at = pg_catalog.now()"
            + " WHERE fencing.kafka_watermark.fence_token OPERATOR(pg_catalog.<) EXCLUDED.fence_token";

    /** The savepoint {@link #INSERT_NEW_WATERMARKS} sets, to roll back to when a key was not new after all. */
    static final String NEW_KEYS_SAVEPOINT = "fencing_new_watermarks";

    /**
     * A save's second step when every key left is one the consumer knows to be new ({@code
     * PartitionProgress.newKeys}) and {@link #UPDATE_KNOWN_WATERMARKS} raised all the others: {@link
     * #RAISE_WATERMARKS} without its {@code ON CONFLICT} arm, which costs a speculative probe of the primary key
     * per row (measured on PostgreSQL 15: 54 ms for 10,000 new keys, 29 ms without it), after a savepoint set
     * in the same round trip. The hint is only a hint: a key that has a row after all (a wrong store hint, a
     * row another transaction wrote) fails the insert with a unique violation, and the store rolls back to the
     * savepoint and sends {@link #RAISE_WATERMARKS}, which keeps a stored token that is already as high.
     *
     * <p>The one thing the upsert did not do: rolling back to the savepoint lets go of the new keys the insert
     * had written, and a transaction that waited on one of them (only a key-parallel member that lost the
     * partition writes its keys without the partition lock) takes the key before the upsert does. Where that
     * member then waits on a row this unit holds, PostgreSQL breaks the deadlock (40P01): a transient failure,
     * the unit rolled back and read again (reproduced in review with a held transaction; nothing lost or
     * lowered).
     */
    static final String INSERT_NEW_WATERMARKS = "SAVEPOINT " + NEW_KEYS_SAVEPOINT + "; " + INSERT_KEYS;

    private static final String UNIQUE_VIOLATION = "23505";

    /**
     * Saves a unit's progress in its transaction: each partition's next offset, as a compare-and-set on the
     * offset the unit loaded ({@link PartitionTakenOverException} if another member moved it), then the
     * watermarks it raised, never lowering a stored one.
     */
    public static void save(Connection connection, String groupId, List<PartitionProgress> progress)
            throws SQLException {
        List<PartitionProgress> inserts = new ArrayList<>();
        List<PartitionProgress> updates = new ArrayList<>();
        for (PartitionProgress p : progress) {
            (p.expectedOffset() < 0 ? inserts : updates).add(p);
        }
        try (PreparedStatement statement = connection.prepareStatement(INSERT_OFFSET)) {
            // one execution per partition, not a batch: a driver that rewrites batched INSERTs into one
            // multi-row INSERT (pgjdbc's reWriteBatchedInserts) reports no count per row, and this count is the
            // compare-and-set. Only a partition's first unit in the group comes here.
            for (PartitionProgress p : inserts) {
                bindPartition(statement, 1, groupId, p.partition());
                statement.setLong(4, p.nextOffset());
                requireOneRowEach(connection, groupId, List.of(p), new int[] {statement.executeUpdate()});
            }
        }
        try (PreparedStatement statement = connection.prepareStatement(UPDATE_OFFSET)) {
            for (PartitionProgress p : updates) {
                statement.setLong(1, p.nextOffset());
                bindPartition(statement, 2, groupId, p.partition());
                statement.setLong(5, p.expectedOffset());
                statement.addBatch();
            }
            requireOneRowEach(connection, groupId, updates, updates.isEmpty() ? new int[0] : statement.executeBatch());
        }
        raiseWatermarks(connection, groupId, progress);
    }

    /**
     * One compare-and-set per partition, sent as one batch: a count other than 1 means another member
     * moved (or first wrote) the partition's offset since this one loaded it.
     */
    private static void requireOneRowEach(
            Connection connection, String groupId, List<PartitionProgress> sent, int[] counts) throws SQLException {
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] != 1) {
                PartitionProgress p = sent.get(i);
                throw new PartitionTakenOverException(
                        groupId, p.partition(), p.expectedOffset(), storedOffset(connection, groupId, p.partition()));
            }
        }
    }

    private static void raiseWatermarks(Connection connection, String groupId, List<PartitionProgress> progress)
            throws SQLException {
        int rows = 0;
        Set<TopicPartition> seen = new HashSet<>();
        for (PartitionProgress p : progress) {
            // ON CONFLICT DO UPDATE refuses to touch a row twice in one statement; say which partition
            if (!seen.add(p.partition())) {
                throw new IllegalArgumentException("partition " + p.partition() + " appears twice in one unit");
            }
            rows += p.raisedWatermarks().size();
        }
        if (rows == 0) {
            return;
        }
        // the keys the consumer knows to have no stored watermark go last, straight to the insert: the update
        // would only probe the primary key for each of them and find nothing
        String[] topics = new String[rows];
        Integer[] partitions = new Integer[rows];
        byte[][] keys = new byte[rows][];
        Long[] tokens = new Long[rows];
        int known = 0;
        int fresh = rows;
        for (PartitionProgress p : progress) {
            Set<Bytes> newKeys = p.newKeys();
            boolean anyNew = !newKeys.isEmpty(); // once: a view's emptiness may cost a pass over its keys
            for (Map.Entry<Bytes, Long> raised : p.raisedWatermarks().entrySet()) {
                int i = anyNew && newKeys.contains(raised.getKey()) ? --fresh : known++;
                topics[i] = p.partition().topic();
                partitions[i] = p.partition().partition();
                keys[i] = raised.getKey().get();
                tokens[i] = raised.getValue();
            }
        }
        boolean[] raised = new boolean[rows];
        int left = rows;
        if (known > 0) {
            Array[] arrays = arrays(
                    connection,
                    Arrays.copyOf(topics, known),
                    Arrays.copyOf(partitions, known),
                    Arrays.copyOf(keys, known),
                    Arrays.copyOf(tokens, known));
            try (PreparedStatement statement = unnamed(connection.prepareStatement(UPDATE_KNOWN_WATERMARKS))) {
                statement.setString(1, groupId);
                for (int p = 0; p < 4; p++) {
                    statement.setArray(p + 2, arrays[p]);
                }
                statement.execute(); // the settings' row first, then the ordinals of the raised keys
                if (!statement.getMoreResults()) {
                    throw new SQLException("the watermarks' update returned no rows");
                }
                try (ResultSet ordinals = statement.getResultSet()) {
                    while (ordinals.next()) {
                        raised[(int) ordinals.getLong(1) - 1] = true;
                        left--;
                    }
                }
            } finally {
                free(arrays);
            }
        }
        if (left == 0) {
            return;
        }
        // every known key raised: what is left is the keys the consumer knows to be new
        boolean onlyNew = left == rows - known;
        String[] newTopics = new String[left];
        Integer[] newPartitions = new Integer[left];
        byte[][] newKeys = new byte[left][];
        Long[] newTokens = new Long[left];
        int j = 0;
        for (int k = 0; k < rows; k++) {
            if (!raised[k]) {
                newTopics[j] = topics[k];
                newPartitions[j] = partitions[k];
                newKeys[j] = keys[k];
                newTokens[j] = tokens[k];
                j++;
            }
        }
        Array[] arrays = arrays(connection, newTopics, newPartitions, newKeys, newTokens);
        try {
            if (onlyNew && insertNew(connection, groupId, arrays)) {
                return;
            }
            try (PreparedStatement statement = connection.prepareStatement(RAISE_WATERMARKS)) {
                bindRaise(statement, groupId, arrays);
                statement.executeUpdate();
            }
        } finally {
            free(arrays);
        }
    }

    /**
     * {@link #INSERT_NEW_WATERMARKS}; false if a key was not new after all, with the transaction rolled back to
     * the savepoint (the insert undone, the unit's other work kept) for {@link #RAISE_WATERMARKS} to send.
     */
    private static boolean insertNew(Connection connection, String groupId, Array[] arrays) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(INSERT_NEW_WATERMARKS)) {
            bindRaise(statement, groupId, arrays);
            statement.execute();
            return true;
        } catch (SQLException e) {
            if (!UNIQUE_VIOLATION.equals(e.getSQLState())) {
                throw e;
            }
            LOG.debug("group {}: a key the consumer took for new has a watermark row; upserting instead", groupId);
        }
        try (Statement rollback = connection.createStatement()) {
            rollback.execute("ROLLBACK TO SAVEPOINT " + NEW_KEYS_SAVEPOINT);
        }
        return false;
    }

    private static void bindRaise(PreparedStatement statement, String groupId, Array[] arrays) throws SQLException {
        statement.setString(1, groupId);
        for (int p = 0; p < 4; p++) {
            statement.setArray(p + 2, arrays[p]);
        }
    }

    private static Array[] arrays(
            Connection connection, String[] topics, Integer[] partitions, byte[][] keys, Long[] tokens)
            throws SQLException {
        return new Array[] {
            connection.createArrayOf("text", topics),
            connection.createArrayOf("int4", partitions),
            connection.createArrayOf("bytea", keys),
            connection.createArrayOf("int8", tokens)
        };
    }

    private static void free(Array[] arrays) throws SQLException {
        for (Array array : arrays) {
            array.free();
        }
    }

    /**
     * {@code statement}, sent as PostgreSQL's unnamed statement if the driver is pgjdbc: never prepared on the
     * server, so planned at each execution with its parameters (no cached generic plan); with another driver
     * as it comes. pgjdbc is found at run time, so that the store does not need it to load.
     */
    static PreparedStatement unnamed(PreparedStatement statement) throws SQLException {
        if (PGJDBC_STATEMENT != null && statement.isWrapperFor(PGJDBC_STATEMENT)) {
            try {
                PGJDBC_SET_PREPARE_THRESHOLD.invoke(statement.unwrap(PGJDBC_STATEMENT), 0);
            } catch (ReflectiveOperationException e) {
                throw new SQLException("could not send the statement unnamed: " + e, e);
            }
        }
        return statement;
    }

    private static final Class<?> PGJDBC_STATEMENT;
    private static final Method PGJDBC_SET_PREPARE_THRESHOLD;

    static {
        Class<?> type = null;
        Method method = null;
        try {
            type = Class.forName("org.postgresql.PGStatement", false, WatermarkSave.class.getClassLoader());
            method = type.getMethod("setPrepareThreshold", int.class);
        } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
            type = null; // not pgjdbc on this class path: statements go as the driver sends them
        }
        PGJDBC_STATEMENT = type;
        PGJDBC_SET_PREPARE_THRESHOLD = method;
    }

    /** The partition's stored next offset, -1 if it has none. */
    public static long storedOffset(Connection connection, String groupId, TopicPartition partition)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
            bindPartition(statement, 1, groupId, partition);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    /** Binds a partition's three key columns (group, topic, partition) from parameter {@code first} on. */
    public static void bindPartition(PreparedStatement statement, int first, String groupId, TopicPartition partition)
            throws SQLException {
        statement.setString(first, groupId);
        statement.setString(first + 1, partition.topic());
        statement.setInt(first + 2, partition.partition());
    }

    private WatermarkSave() {}
}
