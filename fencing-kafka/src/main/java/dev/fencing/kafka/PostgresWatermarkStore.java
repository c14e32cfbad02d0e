package dev.fencing.kafka;

import dev.fencing.kafka.internal.AppliedOffsetStore;
import dev.fencing.kafka.internal.AppliedOffsetStore.LoadedKeys;
import dev.fencing.kafka.internal.PostgresRecordTransactions;
import dev.fencing.kafka.internal.RecordTransactions;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.lang.reflect.Method;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p>Each unit of work first {@link #lockPartition locks} its partitions: a transaction-scoped advisory lock per
 * group and partition, then a check that the stored offset is still the one the consumer loaded. A member
 * that lost its partition (a zombie) therefore waits for the new owner's unit or fails with {@link
 * PartitionTakenOverException} before its handler runs; offsets are also saved with a compare-and-set on
 * that offset. A lock waits for the unit that holds the partition at most the store's lock timeout ({@value
 * #DEFAULT_LOCK_TIMEOUT_SECONDS} s unless given to {@link #create(Jdbi, Duration)}; keep it well below the
 * consumer's {@code max.poll.interval.ms}), or the connection's own {@code lock_timeout} where one is set: a
 * frozen member keeps its transaction, and with it the lock, open for as long as it is frozen. A lock that
 * times out, or that PostgreSQL picks to break a deadlock, rolls its unit back to be read again, and the
 * consumer goes on polling its other partitions meanwhile. Watermarks are read lazily ({@link #loadOffset} at assignment, {@link #loadWatermarks} per
 * poll for unknown keys), so assigning a partition with a million keys costs one query. Watermarks only
 * go up: a commit that offers a key a lower token than the stored one leaves the
 * stored one. Each commit is one transaction at READ COMMITTED, whatever the connections' default
 * isolation. Thread-safe: each call takes its own connection from Jdbi, except that the reads a unit makes
 * (lazy loading, on the unit's thread) join the unit's transaction, since Jdbi hands nested calls the
 * outer handle; one connection per consumer is enough. The statements name every type, function and operator
 * they use with its schema, so the connections' search path does not change what they read or write.
 */
public final class PostgresWatermarkStore implements WatermarkStore<Handle> {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresWatermarkStore.class);
    // The statements here and in PostgresRecordTransactions and PostgresCommitGroup name every type, function and
    // operator with its schema, pg_catalog, so that a session's search path cannot put another in its place (a
    // text of another schema, a domain over varchar(1), stored the topic 'orders' as 'o'). The unnest of several
    // arrays is the exception: PostgreSQL recognises that form only unqualified, and rewrites it to pg_catalog's
    // unnest of each array.
    private static final String LOAD_OFFSET = "SELECT next_offset FROM fencing.kafka_offset"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ?";
    private static final String LOAD_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ?";
    private static final String LOAD_SOME_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ? AND record_key OPERATOR(pg_catalog.=) ANY(?)";
    /** {@link #LOAD_SOME_WATERMARKS} with the keys' applied offsets (V101). */
    private static final String LOAD_SOME_KEYS = "SELECT record_key, fence_token, applied_offset"
            + " FROM fencing.kafka_watermark"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?"
            + " AND kafka_partition OPERATOR(pg_catalog.=) ? AND record_key OPERATOR(pg_catalog.=) ANY(?)";
    /** Whether V101's column is there: without it no key-parallel consumer applied a record in this database. */
    private static final String HAS_APPLIED_OFFSETS = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute"
            + " WHERE attrelid OPERATOR(pg_catalog.=) 'fencing.kafka_watermark'::pg_catalog.regclass"
            + " AND attname OPERATOR(pg_catalog.=) 'applied_offset'"
            + " AND NOT attisdropped)";

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
    static final String PROBE_JOINS_ONLY = "SELECT"
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
    static final String UPDATE_KNOWN = "UPDATE fencing.kafka_watermark AS w"
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
    static final String RAISE_WATERMARKS = INSERT_KEYS
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
     * The zombie fencing needs READ COMMITTED: a unit that waited on the partition lock must see the offset
     * the previous owner committed (a snapshot taken before the wait would not). Jdbi's {@code
     * useTransaction(level, ...)} gets there with a handful of {@code getTransactionIsolation()} round trips
     * per unit; this holds whatever isolation the pool's connections default to. It travels with the unit's
     * first statement ({@link UnitIsolation}): pgjdbc sends its {@code BEGIN} in the same message as that
     * statement, so {@code BEGIN}, this and the partition lock cost one round trip.
     */
    static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

    /**
     * A transaction-scoped advisory lock per group and partition: it needs no row (a partition's first unit
     * has none yet) and no column beyond the V100 schema. Two partitions whose names hash alike share a lock,
     * which only serializes them.
     */
    private static final String LOCK_PARTITION =
            "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(?, 0))";

    /** The uncontended lock: one round trip that takes the lock if nobody holds it. */
    private static final String TRY_LOCK_PARTITION =
            "SELECT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(?, 0))";

    /** A unit's first lock: its transaction's isolation level and the uncontended lock, in one round trip. */
    private static final String FIRST_TRY_LOCK_PARTITION = READ_COMMITTED + "; " + TRY_LOCK_PARTITION;

    /**
     * Before a contended lock waits: bounds the wait by the lock timeout for this transaction, unless the
     * connection has a {@code lock_timeout} of its own, and returns the setting it found so that the handler's
     * statements run under it again once the lock is granted. {@code OFFSET 0} keeps the read of the old
     * setting in a subquery evaluated before {@code set_config}.
     */
    private static final String BOUND_LOCK_WAIT = "SELECT old, pg_catalog.set_config('lock_timeout',"
            + " CASE WHEN old OPERATOR(pg_catalog.=) '0' THEN ? ELSE old END, true)"
            + " FROM (SELECT pg_catalog.current_setting('lock_timeout') AS old OFFSET 0) AS setting";

    private static final String RESTORE_LOCK_TIMEOUT = "SELECT pg_catalog.set_config('lock_timeout', ?, true)";

    /** The default of {@link #create(Jdbi, Duration)}'s lock timeout, in seconds. */
    public static final int DEFAULT_LOCK_TIMEOUT_SECONDS = 30;

    /**
     * A lock that PostgreSQL gave up waiting for: {@code deadlock_detected} (two units locking out of order,
     * which a unit spanning polls can do) and {@code lock_not_available} (the connection's {@code
     * lock_timeout} passed). The partition is busy, not the store broken: the unit is rolled back and read
     * again, as for an offset that moved.
     */
    private static final Set<String> LOCK_NOT_GRANTED = Set.of("40P01", "55P03");

    private final Jdbi jdbi;
    private final String lockTimeout;
    private final PostgresRecordTransactions recordTransactions;
    // V101's applied offsets are in the database: checked at each assignment until they are (a migration may
    // add them while consumers run), then read with every lazy load
    private volatile boolean appliedOffsets;
    /** The unit of work running on each thread, while it runs. */
    private final ThreadLocal<UnitIsolation> units = new ThreadLocal<>();

    private PostgresWatermarkStore(Jdbi jdbi, Duration lockTimeout) {
        this.jdbi = jdbi;
        this.lockTimeout = lockTimeout.toMillis() + "ms";
        this.recordTransactions = new PostgresRecordTransactions(jdbi);
    }

    /**
     * A store on the database behind {@code jdbi}, which must have the V100 migration applied (and V101 for the
     * key-parallel consumer with a transactional handler; V102 only changes the watermark table's layout so
     * that raising a watermark is a HOT update), whose locks wait
     * at most {@value #DEFAULT_LOCK_TIMEOUT_SECONDS} s for another unit's.
     */
    public static PostgresWatermarkStore create(Jdbi jdbi) {
        return create(jdbi, Duration.ofSeconds(DEFAULT_LOCK_TIMEOUT_SECONDS));
    }

    /**
     * A store whose locks wait at most {@code lockTimeout} for the unit that holds a partition (where the
     * connection has no {@code lock_timeout} of its own): from 1 ms to below the consumer's {@code
     * max.poll.interval.ms}, or a member waiting on a frozen one is expelled from the group in turn.
     *
     * @throws IllegalArgumentException if {@code lockTimeout} is below 1 ms or over 24 hours, naming it
     */
    public static PostgresWatermarkStore create(Jdbi jdbi, Duration lockTimeout) {
        Objects.requireNonNull(jdbi, "jdbi");
        Objects.requireNonNull(lockTimeout, "lockTimeout");
        if (lockTimeout.toMillis() < 1 || lockTimeout.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("lockTimeout must be from 1 ms to 24 hours, got " + lockTimeout);
        }
        return new PostgresWatermarkStore(jdbi, lockTimeout);
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
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                if (!appliedOffsets) {
                    try (PreparedStatement statement = connection.prepareStatement(HAS_APPLIED_OFFSETS);
                            ResultSet row = statement.executeQuery()) {
                        appliedOffsets = row.next() && row.getBoolean(1);
                    }
                }
                return storedOffset(connection, groupId, partition);
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load the offset of group " + groupId + " " + partition + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        return loadKeys(groupId, partition, keys, Long.MAX_VALUE).watermarks();
    }

    /** {@link AppliedOffsetStore#loadKeys}: one statement, in the unit's transaction when a unit runs. */
    private LoadedKeys loadKeys(String groupId, TopicPartition partition, Collection<Bytes> keys, long from) {
        if (keys.isEmpty()) {
            return new LoadedKeys(Map.of(), Map.of());
        }
        boolean withApplied = from != Long.MAX_VALUE && appliedOffsets;
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
                Map<Bytes, Long> applied = Map.of();
                try (PreparedStatement statement =
                        connection.prepareStatement(withApplied ? LOAD_SOME_KEYS : LOAD_SOME_WATERMARKS)) {
                    bindPartition(statement, 1, groupId, partition);
                    statement.setArray(4, keyArray);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            Bytes key = Bytes.wrap(rows.getBytes(1));
                            found.put(key, rows.getLong(2));
                            if (withApplied && rows.getLong(3) >= from) {
                                if (applied.isEmpty()) {
                                    applied = new HashMap<>();
                                }
                                applied.put(key, rows.getLong(3));
                            }
                        }
                    }
                } finally {
                    keyArray.free();
                }
                return new LoadedKeys(found, applied);
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
                UnitIsolation isolation = new UnitIsolation(handle);
                handle.addCustomizer(isolation);
                units.set(isolation);
                try {
                    List<PartitionProgress> progress = work.apply(handle);
                    isolation.sendIfPending(handle.getConnection());
                    save(handle.getConnection(), groupId, progress);
                } finally {
                    isolation.end();
                    units.remove();
                }
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not commit a batch of group " + groupId + ": " + e.getMessage(), e);
        }
    }

    /**
     * The key-parallel consumer's transactions on this store's database: one record's ({@code SELECT ... FOR
     * UPDATE} of the key's row, the decision, the handler, one {@code INSERT ... ON CONFLICT DO UPDATE} of the
     * key's token and applied offset, at READ COMMITTED; a key without a row is inserted before the handler
     * runs, so that its row is locked too; needs the V101 migration) and a commit group's. For the
     * consumer only, hence not public.
     */
    RecordTransactions<Handle> recordTransactions() {
        return recordTransactions;
    }

    /**
     * Lazy loads that read the keys' applied offsets too, for a serial consumer that takes a partition from a
     * key-parallel one ({@link AppliedOffsetStore}). For the consumer only, hence not public.
     */
    AppliedOffsetStore appliedOffsetStore() {
        return this::loadKeys;
    }

    /**
     * Locks the partition for the rest of the transaction and checks its stored offset. The stored offset is
     * the partition's epoch: every commit moves it, so a unit that loaded an older one belongs to a member that
     * lost the partition; and a unit that holds the lock makes every other unit wait until it commits or
     * rolls back, then fail this check. Either way no two units handle the same records.
     */
    @Override
    public void lockPartition(Handle handle, String groupId, TopicPartition partition, long expectedOffset) {
        try {
            Connection connection = handle.getConnection();
            String lockName = groupId + "/" + partition.topic() + "/" + partition.partition();
            UnitIsolation isolation = units.get();
            boolean first = isolation != null && isolation.takePending(handle);
            if (!tryLock(connection, lockName, first)) {
                lockWithin(connection, lockName);
            }
            long stored = storedOffset(connection, groupId, partition);
            if (stored != expectedOffset) {
                throw new PartitionTakenOverException(groupId, partition, expectedOffset, stored);
            }
        } catch (SQLException e) {
            if (LOCK_NOT_GRANTED.contains(e.getSQLState())) {
                throw new PartitionTakenOverException(
                        groupId, partition, "another unit of work holds its lock (" + e.getMessage() + ")");
            }
            throw new WatermarkStoreException(
                    "could not lock " + partition + " for group " + groupId + ": " + e.getMessage(), e);
        }
    }

    /** With {@code setIsolation}, the unit's isolation level goes in the same round trip, before the lock. */
    private static boolean tryLock(Connection connection, String lockName, boolean setIsolation) throws SQLException {
        try (PreparedStatement statement =
                connection.prepareStatement(setIsolation ? FIRST_TRY_LOCK_PARTITION : TRY_LOCK_PARTITION)) {
            statement.setString(1, lockName);
            if (setIsolation) {
                statement.execute(); // the SET's empty result first, then the lock's row
                if (!statement.getMoreResults()) {
                    throw new SQLException("the partition lock returned no row");
                }
            } else {
                statement.execute();
            }
            try (ResultSet rows = statement.getResultSet()) {
                return rows.next() && rows.getBoolean(1);
            }
        }
    }

    /**
     * The isolation level of the unit of work on this thread while it is not yet sent. {@link #READ_COMMITTED}
     * must be the transaction's first statement, and a round trip of its own is a seventh of a unit's: it goes
     * with the first lock (the consumer locks before anything else), or just before the work's first Jdbi
     * statement (this customizer), or before the save, whichever comes first. A statement the work sends on the
     * raw connection before any of these runs at the connection's default level; PostgreSQL then refuses the
     * late {@code SET TRANSACTION} and the unit fails: never a unit silently at another level. One per unit,
     * used on the unit's thread only.
     */
    private static final class UnitIsolation implements StatementCustomizer {
        private final Handle handle;
        private boolean pending = true;

        UnitIsolation(Handle handle) {
            this.handle = handle;
        }

        /** True once, if the level is still to be sent for {@code unit}'s transaction: the caller sends it. */
        boolean takePending(Handle unit) {
            if (!pending || unit != handle) {
                return false;
            }
            pending = false;
            return true;
        }

        void sendIfPending(Connection connection) throws SQLException {
            if (takePending(handle)) {
                try (Statement statement = connection.createStatement()) {
                    statement.execute(READ_COMMITTED);
                }
            }
        }

        @Override
        public void beforeExecution(PreparedStatement statement, StatementContext context) throws SQLException {
            sendIfPending(context.getConnection());
        }

        /** After the unit: a handle that outlives it (a caller's own, reused by Jdbi) is left as it was. */
        void end() {
            pending = false;
        }
    }

    /**
     * Waits for the lock in PostgreSQL's queue (so that a deadlock between two locks is detected), bounded by
     * the lock timeout; a timeout raises {@code lock_not_available}.
     */
    private void lockWithin(Connection connection, String lockName) throws SQLException {
        String old;
        try (PreparedStatement statement = connection.prepareStatement(BOUND_LOCK_WAIT)) {
            statement.setString(1, lockTimeout);
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
            type = Class.forName("org.postgresql.PGStatement", false, PostgresWatermarkStore.class.getClassLoader());
            method = type.getMethod("setPrepareThreshold", int.class);
        } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
            type = null; // not pgjdbc on this class path: statements go as the driver sends them
        }
        PGJDBC_STATEMENT = type;
        PGJDBC_SET_PREPARE_THRESHOLD = method;
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
