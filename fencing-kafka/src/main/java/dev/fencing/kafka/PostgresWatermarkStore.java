package dev.fencing.kafka;

import static dev.fencing.kafka.internal.WatermarkSave.bindPartition;
import static dev.fencing.kafka.internal.WatermarkSave.storedOffset;

import dev.fencing.kafka.internal.AppliedOffsetStore;
import dev.fencing.kafka.internal.AppliedOffsetStore.LoadedKeys;
import dev.fencing.kafka.internal.PostgresRecordTransactions;
import dev.fencing.kafka.internal.RecordTransactions;
import dev.fencing.kafka.internal.WatermarkSave;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import dev.fencing.kafka.spi.WatermarkStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
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
    // The statements here and in WatermarkSave, PostgresRecordTransactions and PostgresCommitGroup name every type,
    // function and
    // operator with its schema, pg_catalog, so that a session's search path cannot put another in its place (a
    // text of another schema, a domain over varchar(1), stored the topic 'orders' as 'o'). The unnest of several
    // arrays is the exception: PostgreSQL recognises that form only unqualified, and rewrites it to pg_catalog's
    // unnest of each array.
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

    /**
     * Records the group's id of a topic unless it has one, and returns the id it has: the inserted row, or the
     * stored one (the two arms read the same snapshot, so exactly one of them returns a row, except when another
     * member's insert committed while this one waited on it: then neither does, and the caller asks again).
     */
    private static final String RECORD_TOPIC_ID = "WITH inserted AS (INSERT INTO fencing.kafka_topic"
            + " (consumer_group, topic, topic_id) VALUES (?, ?, ?::pg_catalog.uuid) ON CONFLICT DO NOTHING"
            + " RETURNING topic_id)"
            + " SELECT topic_id::pg_catalog.text FROM inserted UNION ALL"
            + " SELECT topic_id::pg_catalog.text FROM fencing.kafka_topic"
            + " WHERE consumer_group OPERATOR(pg_catalog.=) ? AND topic OPERATOR(pg_catalog.=) ?";

    /** Whether V104's table is there: without it the store keeps no topic ids and makes no recreation check. */
    private static final String HAS_TOPIC_IDS = "SELECT pg_catalog.to_regclass('fencing.kafka_topic') IS NOT NULL";

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
    // V104's table is in the database: checked at each assignment until it is
    private volatile boolean topicIds;
    /** The unit of work running on each thread, while it runs. */
    private final ThreadLocal<UnitIsolation> units = new ThreadLocal<>();
    /** The topic ids recorded in the transaction of the unit of work running on each thread, while it runs. */
    private final ThreadLocal<List<TopicId>> unitTopicIds = new ThreadLocal<>();

    /** A topic id offered to {@link #recordTopicId}. */
    private record TopicId(String groupId, String topic, Uuid id) {}

    private PostgresWatermarkStore(Jdbi jdbi, Duration lockTimeout) {
        this.jdbi = jdbi;
        this.lockTimeout = lockTimeout.toMillis() + "ms";
        this.recordTransactions = new PostgresRecordTransactions(jdbi);
    }

    /**
     * A store on the database behind {@code jdbi}, which must have the V100 migration applied (and V101 for the
     * key-parallel consumer with a transactional handler; V102 only changes the watermark table's layout so
     * that raising a watermark is a HOT update; V104 for the check of recreated topics, {@link
     * #recordTopicId}), whose locks wait
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
                long nextOffset = storedOffset(connection, groupId, partition);
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

    /**
     * Records {@code currentId} in {@code fencing.kafka_topic} (the V104 migration) if the group has no id for the
     * topic, in a transaction of its own, and returns the id stored. Without V104 it returns empty, recording
     * nothing (no recreation check), and logs that once per assignment until the migration is applied. Called
     * during a unit of work on the unit's thread (a rebalance callback inside the unit's poll), it reads and
     * writes in the unit's transaction, as every nested call does, so that a pool of one connection is enough;
     * if that unit is rolled back (as a unit spanning a rebalance is), the id is recorded again once the
     * transaction has ended.
     */
    @Override
    public Optional<Uuid> recordTopicId(String groupId, String topic, Uuid currentId) {
        Objects.requireNonNull(currentId, "currentId");
        List<TopicId> inUnit = unitTopicIds.get();
        if (inUnit != null) {
            inUnit.add(new TopicId(groupId, topic, currentId));
        }
        UUID id = new UUID(currentId.getMostSignificantBits(), currentId.getLeastSignificantBits());
        try {
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                if (!topicIds) {
                    try (Statement statement = connection.createStatement();
                            ResultSet rows = statement.executeQuery(HAS_TOPIC_IDS)) {
                        topicIds = rows.next() && rows.getBoolean(1);
                    }
                    if (!topicIds) {
                        LOG.warn(
                                "group {} topic {}: fencing.kafka_topic is missing (apply the V104 migration): a topic"
                                        + " deleted and created again under the same name is not detected",
                                groupId,
                                topic);
                        return Optional.empty();
                    }
                }
                try (PreparedStatement statement = connection.prepareStatement(RECORD_TOPIC_ID)) {
                    statement.setString(1, groupId);
                    statement.setString(2, topic);
                    statement.setString(3, id.toString());
                    statement.setString(4, groupId);
                    statement.setString(5, topic);
                    for (int attempt = 0; attempt < 2; attempt++) {
                        try (ResultSet rows = statement.executeQuery()) {
                            if (rows.next()) {
                                UUID stored = UUID.fromString(rows.getString(1));
                                return Optional.of(
                                        new Uuid(stored.getMostSignificantBits(), stored.getLeastSignificantBits()));
                            }
                        }
                    }
                    throw new SQLException("no topic id recorded nor found for group " + groupId + " topic " + topic);
                }
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not record the topic id of group " + groupId + " topic " + topic + ": " + e.getMessage(), e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code work} runs at most once, whatever Jdbi's transaction handler does: one that runs a failed
     * transaction's callback again (Jdbi's {@code SerializableTransactionRunner}, after a serialization failure)
     * gets a second run that rolls back at once, and the first attempt's failure is thrown as it would be without
     * that handler (a failure at its COMMIT, which the handler does not hand on, as a {@link
     * SQLTransactionRollbackException}), for the consumer to roll the unit back and run it again from its records.
     */
    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        Objects.requireNonNull(groupId, "groupId");
        List<TopicId> recordedInUnit = new ArrayList<>(0);
        // The unit's state is the consumer's, in memory, kept across a rollback until the consumer undoes it (its
        // watermarks raised by the unit's records, its partitions opened and locked): a second run of the callback
        // would decide the unit's records against what the rolled-back attempt left there (a record whose token
        // the attempt raised its key to is stale, and its offset saved without its effect).
        boolean[] began = new boolean[1];
        Throwable[] attemptFailure = new Throwable[1];
        try {
            jdbi.useTransaction(handle -> {
                if (began[0]) {
                    throw new RunAgain();
                }
                began[0] = true;
                UnitIsolation isolation = new UnitIsolation(handle);
                handle.addCustomizer(isolation);
                units.set(isolation);
                unitTopicIds.set(recordedInUnit);
                try {
                    List<PartitionProgress> progress = work.apply(handle);
                    isolation.sendIfPending(handle.getConnection());
                    WatermarkSave.save(handle.getConnection(), groupId, progress);
                } catch (RuntimeException | Error | SQLException e) {
                    attemptFailure[0] = e;
                    throw e;
                } finally {
                    isolation.end();
                    units.remove();
                    unitTopicIds.remove();
                }
            });
        } catch (SQLException | RuntimeException | Error e) {
            // a handler that ran the callback again throws its RunAgain, perhaps wrapped: what failed is the first run
            throw failed(groupId, recordedInUnit, ranAgain(e) ? firstRunsFailure(attemptFailure[0]) : e);
        }
    }

    private static boolean ranAgain(Throwable failure) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof RunAgain) {
                return true;
            }
        }
        return false;
    }

    /**
     * The failure of a unit's first run that the transaction handler ran again: what the work threw, or, when the
     * work ended without one, a failure after it (its COMMIT, such as a serialization failure or a deferred
     * constraint there), which the handler kept to itself. The unit was rolled back either way, so the consumer may
     * run it again from its records ({@link SQLTransactionRollbackException} is transient to it), as it does after
     * a failed COMMIT without such a handler.
     */
    private static Throwable firstRunsFailure(Throwable workFailure) {
        return workFailure != null
                ? workFailure
                : new SQLTransactionRollbackException("the unit's transaction failed after its work (at its COMMIT)"
                        + " and the transaction handler ran it again; it was rolled back");
    }

    /** Thrown by a second run of a unit's transaction: it rolls back at once. */
    private static final class RunAgain extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RunAgain() {
            super("the transaction handler ran the unit's transaction again", null, false, false);
        }
    }

    /** What {@link #commit} throws for a unit that failed; its topic ids recorded again first. */
    private RuntimeException failed(String groupId, List<TopicId> recordedInUnit, Throwable failure) {
        if (failure instanceof JdbiException || failure instanceof SQLException) {
            WatermarkStoreException wrapped = new WatermarkStoreException(
                    "could not commit a batch of group " + groupId + ": " + failure.getMessage(), failure);
            recordAgain(recordedInUnit, wrapped);
            return wrapped;
        }
        recordAgain(recordedInUnit, failure);
        if (failure instanceof Error error) {
            throw error;
        }
        return (RuntimeException) failure;
    }

    /**
     * After a unit of work that was rolled back (or whose commit failed): records again, each in a transaction of
     * its own, the topic ids it recorded in its transaction. A failure to do so is added to the unit's; the id is
     * then recorded when the consumer takes the topic's partitions again (as after any transient failure).
     */
    private void recordAgain(List<TopicId> recordedInUnit, Throwable unitFailure) {
        for (TopicId recorded : recordedInUnit) {
            try {
                recordTopicId(recorded.groupId(), recorded.topic(), recorded.id());
            } catch (RuntimeException e) {
                unitFailure.addSuppressed(e);
                LOG.warn(
                        "group {} topic {}: the id recorded in a unit of work that was rolled back could not be"
                                + " recorded again: {}",
                        recorded.groupId(),
                        recorded.topic(),
                        e.toString());
            }
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
}
