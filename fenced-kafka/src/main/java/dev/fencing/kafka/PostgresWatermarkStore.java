package dev.fencing.kafka;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.PostgresRecordTransactions;
import dev.fencing.kafka.internal.RecordTransactions;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

/**
 * A {@link WatermarkStore} in PostgreSQL: the tables {@code fencing.kafka_watermark} and {@code
 * fencing.kafka_offset} that the {@code db} module's migration {@code V100__kafka_consumer_state.sql}
 * creates (add {@code classpath:dev/fencing/db/migration} to Flyway's locations).
 *
 * <p>Each batch is one transaction: a {@link TransactionalRecordHandler} gets the transaction's {@code
 * Handle}, and its writes, the raised watermarks and the next offsets commit together. A crash at any point
 * leaves either all of a batch or none of it, so after a restart no record's effect is applied twice and
 * the watermarks that refused records before the crash refuse them after it.
 *
 * <pre>{@code
 * Jdbi jdbi = Jdbi.create(dataSource);
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(
 *                 new StringDeserializer(), new StringDeserializer())
 *         .properties(config)
 *         .topics("stock-moves")
 *         .transactionalHandler(
 *                 PostgresWatermarkStore.create(jdbi),
 *                 (handle, record, token) ->
 *                         handle.execute("UPDATE stock SET qty = qty - 1 WHERE sku = ?", record.key()))
 *         .build();
 * }</pre>
 *
 * <p>Each unit of work first {@link #claim claims} its partitions: a transaction-scoped advisory lock per
 * group and partition, then a check that the stored offset is still the one the consumer loaded. A member
 * that lost its partition (a zombie) therefore waits for the new owner's unit or fails with {@link
 * StalePartitionStateException} before its handler runs; offsets are also saved with a compare-and-set on
 * that offset. A claim waits for the unit that holds the partition at most the store's claim timeout ({@value
 * #DEFAULT_CLAIM_TIMEOUT_SECONDS} s unless given to {@link #create(Jdbi, Duration)}; keep it well below the
 * consumer's {@code max.poll.interval.ms}), or the connection's own {@code lock_timeout} where one is set: a
 * frozen member keeps its transaction, and with it the claim, open for as long as it is frozen. A claim that
 * times out, or that PostgreSQL picks to break a deadlock, rolls its unit back to be read again, and the
 * consumer goes on polling its other partitions meanwhile. Watermarks are read lazily ({@link #loadOffset} at assignment, {@link #loadWatermarks} per
 * poll for unknown keys), so assigning a partition with a million keys costs one query. Watermarks only
 * go up: a commit that offers a key a lower token than the stored one leaves the
 * stored one. Each commit is one transaction at READ COMMITTED, whatever the connections' default
 * isolation. Thread-safe: each call takes its own connection from Jdbi, except that the reads a unit makes
 * (lazy loading, on the unit's thread) join the unit's transaction, since Jdbi hands nested calls the
 * outer handle; one connection per consumer is enough.
 */
public final class PostgresWatermarkStore implements WatermarkStore<Handle>, RecordTransactions<Handle> {
    private static final String LOAD_OFFSET = "SELECT next_offset FROM fencing.kafka_offset"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String LOAD_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String LOAD_SOME_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? AND record_key = ANY(?)";
    private static final String INSERT_OFFSET = "INSERT INTO fencing.kafka_offset"
            + " (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE_OFFSET = "UPDATE fencing.kafka_offset SET next_offset = ?, updated_at = now()"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? AND next_offset = ?";
    /**
     * Raises the watermarks of all of a unit's partitions in one statement. Each input row is one probe of
     * the primary key, whatever plan PostgreSQL caches for the statement: it has no join for a generic plan
     * to get wrong (an earlier UPDATE ... FROM unnest(...) form, once server-prepared, could get a cached
     * nested loop comparing every input key with every stored key, seconds per unit). The {@code WHERE}
     * keeps a stored token that is already as high: a save never lowers a watermark, and a key it does not
     * raise is not rewritten.
     */
    static final String RAISE_WATERMARKS =
            "INSERT INTO fencing.kafka_watermark (consumer_group, topic, kafka_partition, record_key, fence_token)"
                    + " SELECT ?, u.topic, u.kafka_partition, u.record_key, u.fence_token"
                    + " FROM unnest(?::text[], ?::int4[], ?::bytea[], ?::int8[])"
                    + " AS u(topic, kafka_partition, record_key, fence_token)"
                    + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
                    + " SET fence_token = EXCLUDED.fence_token, updated_at = now()"
                    + " WHERE fencing.kafka_watermark.fence_token < EXCLUDED.fence_token";

    /**
     * The first statement of every unit's transaction. The zombie fencing needs READ COMMITTED: a claimant
     * that waited on the partition lock must see the offset the previous owner committed (a snapshot taken
     * before the wait would not). Jdbi's {@code useTransaction(level, ...)} gets there with a handful of
     * {@code getTransactionIsolation()} round trips per unit; this is one statement, and it holds whatever
     * isolation the pool's connections default to.
     */
    static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

    /**
     * A transaction-scoped advisory lock per group and partition: it needs no row (a partition's first unit
     * has none yet) and no column beyond the V100 schema. Two partitions whose names hash alike share a lock,
     * which only serializes them.
     */
    private static final String LOCK_PARTITION = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))";

    /** The uncontended claim: one round trip that takes the lock if nobody holds it. */
    private static final String TRY_LOCK_PARTITION = "SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))";

    /**
     * Before a contended claim waits: bounds the wait by the claim timeout for this transaction, unless the
     * connection has a {@code lock_timeout} of its own, and returns the setting it found so that the handler's
     * statements run under it again once the claim is granted. {@code OFFSET 0} keeps the read of the old
     * setting in a subquery evaluated before {@code set_config}.
     */
    private static final String BOUND_CLAIM_WAIT = "SELECT old, set_config('lock_timeout',"
            + " CASE WHEN old = '0' THEN ? ELSE old END, true)"
            + " FROM (SELECT current_setting('lock_timeout') AS old OFFSET 0) AS setting";

    private static final String RESTORE_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', ?, true)";

    /** The default of {@link #create(Jdbi, Duration)}'s claim timeout, in seconds. */
    public static final int DEFAULT_CLAIM_TIMEOUT_SECONDS = 30;

    /**
     * A claim that PostgreSQL gave up waiting for: {@code deadlock_detected} (two units claiming out of order,
     * which a unit spanning polls can do) and {@code lock_not_available} (the connection's {@code
     * lock_timeout} passed). The partition is busy, not the store broken: the unit is rolled back and read
     * again, as for an offset that moved.
     */
    private static final Set<String> CLAIM_NOT_GRANTED = Set.of("40P01", "55P03");

    private final Jdbi jdbi;
    private final String claimTimeout;
    private final PostgresRecordTransactions recordTransactions;

    private PostgresWatermarkStore(Jdbi jdbi, Duration claimTimeout) {
        this.jdbi = jdbi;
        this.claimTimeout = claimTimeout.toMillis() + "ms";
        this.recordTransactions = new PostgresRecordTransactions(jdbi);
    }

    /**
     * A store on the database behind {@code jdbi}, which must have the V100 migration applied (and V101 for the
     * key-parallel consumer with a transactional handler), whose claims wait
     * at most {@value #DEFAULT_CLAIM_TIMEOUT_SECONDS} s for another unit's.
     */
    public static PostgresWatermarkStore create(Jdbi jdbi) {
        return create(jdbi, Duration.ofSeconds(DEFAULT_CLAIM_TIMEOUT_SECONDS));
    }

    /**
     * A store whose claims wait at most {@code claimTimeout} for the unit that holds a partition (where the
     * connection has no {@code lock_timeout} of its own): from 1 ms to below the consumer's {@code
     * max.poll.interval.ms}, or a member waiting on a frozen one is expelled from the group in turn.
     *
     * @throws IllegalArgumentException if {@code claimTimeout} is below 1 ms or over 24 hours, naming it
     */
    public static PostgresWatermarkStore create(Jdbi jdbi, Duration claimTimeout) {
        Objects.requireNonNull(jdbi, "jdbi");
        Objects.requireNonNull(claimTimeout, "claimTimeout");
        if (claimTimeout.toMillis() < 1 || claimTimeout.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("claimTimeout must be from 1 ms to 24 hours, got " + claimTimeout);
        }
        return new PostgresWatermarkStore(jdbi, claimTimeout);
    }

    @Override
    public PartitionState load(String groupId, TopicPartition partition) {
        try {
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                long nextOffset = -1;
                try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
                    bindPartition(statement, 1, groupId, partition);
                    try (ResultSet rows = statement.executeQuery()) {
                        if (rows.next()) {
                            nextOffset = rows.getLong(1);
                        }
                    }
                }
                Map<Bytes, Long> watermarks = new HashMap<>();
                try (PreparedStatement statement = connection.prepareStatement(LOAD_WATERMARKS)) {
                    statement.setFetchSize(10_000);
                    bindPartition(statement, 1, groupId, partition);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            watermarks.put(Bytes.wrap(rows.getBytes(1)), rows.getLong(2));
                        }
                    }
                }
                return new PartitionState(nextOffset, watermarks);
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load watermarks of group " + groupId + " " + partition + ": " + e.getMessage(), e);
        }
    }

    @Override
    public long loadOffset(String groupId, TopicPartition partition) {
        try {
            return jdbi.withHandle(handle -> storedOffset(handle.getConnection(), groupId, partition));
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load the offset of group " + groupId + " " + partition + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        if (keys.isEmpty()) {
            return Map.of();
        }
        try {
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                byte[][] wanted = new byte[keys.size()][];
                int i = 0;
                for (Bytes key : keys) {
                    wanted[i++] = key.get();
                }
                Array keyArray = connection.createArrayOf("bytea", wanted);
                Map<Bytes, Long> found = new HashMap<>();
                try (PreparedStatement statement = connection.prepareStatement(LOAD_SOME_WATERMARKS)) {
                    bindPartition(statement, 1, groupId, partition);
                    statement.setArray(4, keyArray);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            found.put(Bytes.wrap(rows.getBytes(1)), rows.getLong(2));
                        }
                    }
                } finally {
                    keyArray.free();
                }
                return found;
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load " + keys.size() + " watermarks of group " + groupId + " " + partition + ": "
                            + e.getMessage(),
                    e);
        }
    }

    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        Objects.requireNonNull(groupId, "groupId");
        try {
            jdbi.useTransaction(handle -> {
                try (Statement statement = handle.getConnection().createStatement()) {
                    statement.execute(READ_COMMITTED);
                }
                List<PartitionProgress> progress = work.apply(handle);
                save(handle.getConnection(), groupId, progress);
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not commit a batch of group " + groupId + ": " + e.getMessage(), e);
        }
    }

    /**
     * The key-parallel consumer's transaction for one record ({@link RecordTransactions}): a {@code SELECT ...
     * FOR UPDATE} of the key's row, the decision, your handler, and one {@code INSERT ... ON CONFLICT DO
     * UPDATE} of the key's token and applied offset, at READ COMMITTED. Needs the V101 migration. Called by
     * the consumer; an application has no reason to.
     */
    @Override
    public long applyOnce(
            String groupId,
            TopicPartition partition,
            byte[] key,
            long offset,
            long token,
            FencePolicy policy,
            Consumer<? super Handle> work) {
        return recordTransactions.applyOnce(groupId, partition, key, offset, token, policy, work);
    }

    /**
     * The key-parallel consumer's commit group ({@link RecordTransactions#applyGroup}); called by the consumer;
     * an application has no reason to.
     */
    @Override
    public long[] applyGroup(
            String groupId,
            List<GroupRecord> records,
            FencePolicy policy,
            long deadline,
            GroupWork<? super Handle> work) {
        return recordTransactions.applyGroup(groupId, records, policy, deadline, work);
    }

    /**
     * Locks the partition for the rest of the transaction and checks its stored offset. The stored offset is
     * the partition's epoch: every commit moves it, so a unit that loaded an older one belongs to a member that
     * lost the partition; and a unit that holds the lock makes every other claimant wait until it commits or
     * rolls back, then fail this check. Either way no two units handle the same records.
     */
    @Override
    public void claim(Handle handle, String groupId, TopicPartition partition, long expectedOffset) {
        try {
            Connection connection = handle.getConnection();
            String lockName = groupId + "/" + partition.topic() + "/" + partition.partition();
            if (!tryLock(connection, lockName)) {
                lockWithin(connection, lockName);
            }
            long stored = storedOffset(connection, groupId, partition);
            if (stored != expectedOffset) {
                throw new StalePartitionStateException(groupId, partition, expectedOffset, stored);
            }
        } catch (SQLException e) {
            if (CLAIM_NOT_GRANTED.contains(e.getSQLState())) {
                throw new StalePartitionStateException(
                        groupId, partition, "another unit of work holds its claim (" + e.getMessage() + ")");
            }
            throw new WatermarkStoreException(
                    "could not claim " + partition + " for group " + groupId + ": " + e.getMessage(), e);
        }
    }

    private static boolean tryLock(Connection connection, String lockName) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(TRY_LOCK_PARTITION)) {
            statement.setString(1, lockName);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() && rows.getBoolean(1);
            }
        }
    }

    /**
     * Waits for the lock in PostgreSQL's queue (so that a deadlock between two claims is detected), bounded by
     * the claim timeout; a timeout raises {@code lock_not_available}.
     */
    private void lockWithin(Connection connection, String lockName) throws SQLException {
        String old;
        try (PreparedStatement statement = connection.prepareStatement(BOUND_CLAIM_WAIT)) {
            statement.setString(1, claimTimeout);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                old = rows.getString(1);
            }
        }
        try (PreparedStatement statement = connection.prepareStatement(LOCK_PARTITION)) {
            statement.setString(1, lockName);
            statement.execute();
        }
        try (PreparedStatement statement = connection.prepareStatement(RESTORE_LOCK_TIMEOUT)) {
            statement.setString(1, old);
            statement.execute();
        }
    }

    private static void save(Connection connection, String groupId, List<PartitionProgress> progress)
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
                throw new StalePartitionStateException(
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
        String[] topics = new String[rows];
        Integer[] partitions = new Integer[rows];
        byte[][] keys = new byte[rows][];
        Long[] tokens = new Long[rows];
        int i = 0;
        for (PartitionProgress p : progress) {
            for (Map.Entry<Bytes, Long> raised : p.raisedWatermarks().entrySet()) {
                topics[i] = p.partition().topic();
                partitions[i] = p.partition().partition();
                keys[i] = raised.getKey().get();
                tokens[i] = raised.getValue();
                i++;
            }
        }
        Array topicArray = connection.createArrayOf("text", topics);
        Array partitionArray = connection.createArrayOf("int4", partitions);
        Array keyArray = connection.createArrayOf("bytea", keys);
        Array tokenArray = connection.createArrayOf("int8", tokens);
        try (PreparedStatement statement = connection.prepareStatement(RAISE_WATERMARKS)) {
            statement.setString(1, groupId);
            statement.setArray(2, topicArray);
            statement.setArray(3, partitionArray);
            statement.setArray(4, keyArray);
            statement.setArray(5, tokenArray);
            statement.executeUpdate();
        } finally {
            topicArray.free();
            partitionArray.free();
            keyArray.free();
            tokenArray.free();
        }
    }

    private static long storedOffset(Connection connection, String groupId, TopicPartition partition)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
            bindPartition(statement, 1, groupId, partition);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    private static void bindPartition(PreparedStatement statement, int first, String groupId, TopicPartition partition)
            throws SQLException {
        statement.setString(first, groupId);
        statement.setString(first + 1, partition.topic());
        statement.setInt(first + 2, partition.partition());
    }
}
