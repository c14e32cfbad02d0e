package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedRowHandler;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.WatermarkStoreException;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link FencedRowHandler} runs on: the consumer's store (a {@link PostgresWatermarkStore} whose units it
 * wraps), its transactional handler (which collects each accepted record's row update) and its {@link
 * UnitEffects} (which sends a unit's updates in segments, {@link #finishUnit}, and reports the rows that refused
 * theirs).
 *
 * <p>Watermarks: the row is the key's watermark. A save leaves out of {@code fencing.kafka_watermark} every key
 * whose row this unit wrote or was refused by (the row then holds at least the raised token); what is left is
 * a key raised without a row write (a record whose value could not be deserialized, dead-lettered). Loads
 * take, per key, the greater of the row's token and the stored watermark. Serial consumer only: one unit at a
 * time, on the poll thread.
 */
public final class FencedRowUnits<K, V>
        implements WatermarkStore<Handle>,
                TransactionalRecordHandler<Handle, K, V>,
                UnitEffects<Handle>,
                AppliedOffsetStore {
    private final PostgresWatermarkStore store;
    private final AppliedOffsetStore storedKeys;
    private final FencedRowHandler<K, V> rows;
    private final Deserializer<K> keyDeserializer;
    private final String update;
    private final String rowTokens;
    private final FencePolicy policy;
    private final String[] columnTypes; // of rows.columns(), in order
    private FencedWriter writer; // made from the first unit's handle, poll thread only
    private long fallbacksLogged; // batches undone to their savepoints, poll thread only
    private Unit unit; // the running unit of work, poll thread only

    public FencedRowUnits(
            PostgresWatermarkStore store,
            AppliedOffsetStore storedKeys,
            FencedRowHandler<K, V> rows,
            Deserializer<K> keyDeserializer,
            FencePolicy policy) {
        this.store = store;
        this.storedKeys = storedKeys;
        this.rows = rows;
        this.keyDeserializer = keyDeserializer;
        this.policy = policy;
        FencedTable table = rows.table();
        this.columnTypes = rows.columns().stream()
                .map(column -> table.columnType(column).orElseThrow())
                .toArray(String[]::new);
        String fence = quoted(table.fenceColumn());
        String key = quoted(rows.keyColumn());
        String keyType = table.columnType(rows.keyColumn()).orElseThrow();
        // the key compared as fencing-jdbc's statements compare it (the equality of its unique index's class)
        String keyCondition = table.keyEquals(rows.keyColumn(), key, "CAST(? AS " + keyType + ")");
        // ONLY: never a row of an inheritance child added after the table was checked (a partitioned table's
        // rows are all in its partitions)
        String target = table.partitioned() ? table.quotedName() : "ONLY " + table.quotedName();
        StringBuilder sql = new StringBuilder("UPDATE ").append(target).append(" SET ");
        for (String column : rows.columns()) {
            sql.append(quoted(column))
                    .append(" = CAST(? AS ")
                    .append(table.columnType(column).orElseThrow())
                    .append("), ");
        }
        // one statement: the check and the write (the fencing-db module's guard trigger backs it for other writers);
        // operators named with their schema, as fencing-jdbc's statements write them
        sql.append(fence)
                .append(" = ? WHERE ")
                .append(keyCondition)
                .append(" AND ")
                .append(fence)
                .append(policy == FencePolicy.STRICT ? " OPERATOR(pg_catalog.<) ?" : " OPERATOR(pg_catalog.<=) ?");
        this.update = sql.toString();
        // by the key's text as asked for, not as the row spells it ('07' asks for row 7, and is answered as '07')
        this.rowTokens = "SELECT wanted.k, " + fence + " FROM " + target
                + " JOIN pg_catalog.unnest(CAST(? AS pg_catalog.text[])) AS wanted(k) ON "
                + table.keyEquals(rows.keyColumn(), key, "CAST(wanted.k AS " + keyType + ")");
    }

    /** The most segments a unit takes before it ends ({@link #unitFull}). */
    public static final int MAX_SEGMENTS = 32;

    /** The smallest segment written as one batch statement; smaller ones are single-row updates. */
    public static final int MIN_STATEMENT_ROWS = 32;

    private static final Set<String> TEXT_TYPES = Set.of("text", "character varying", "bpchar");
    private static final Set<String> WHOLE_NUMBER_TYPES =
            Set.of("smallint", "integer", "bigint", "numeric", "real", "double precision");
    private static final Logger LOG = LoggerFactory.getLogger(FencedRowUnits.class);

    /** Segments written as one batch statement, by every instance (for tests: which path a segment took). */
    private static final AtomicLong BATCH_STATEMENTS = new AtomicLong();

    private static String quoted(String identifier) {
        return '"' + identifier + '"'; // FencedTable allows only [a-z_][a-z0-9_]*
    }

    /** One accepted record's row update, waiting for the end of its unit. */
    private record Write(TopicPartition partition, long offset, long token, Object rowKey, Object[] values) {}

    private static final class Unit {
        final Handle handle;
        // the unit's writes not sent yet, by segment, in record order
        final List<List<Write>> segments = new ArrayList<>();
        // the row keys (text forms) of the last segment's writes; a key seen again starts a new segment
        final Set<String> segmentKeys = new HashSet<>();
        // per row key (its text form): a token the row holds at least, once this unit's batch ran
        final Map<String, Long> rowHolds = new HashMap<>();

        Unit(Handle handle) {
            this.handle = handle;
        }
    }

    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        store.commit(groupId, handle -> {
            Unit running = new Unit(handle);
            unit = running;
            try {
                List<PartitionProgress> progress = work.apply(handle);
                if (!running.segments.isEmpty()) {
                    // the consumer always finishes a unit before it saves; never commit effects not written
                    throw new IllegalStateException("a unit of work ended with fenced row updates not sent");
                }
                return withoutRowWatermarks(progress, running);
            } finally {
                unit = null;
            }
        });
    }

    @Override
    public void handle(Handle transaction, ConsumerRecord<K, V> record, long token) {
        Unit running = unitOf(transaction);
        Object rowKey = rows.rowKey(record.key());
        if (rowKey == null) {
            throw new IllegalArgumentException("record " + record.topic() + "-" + record.partition() + "@"
                    + record.offset() + " maps to no row of " + rows.table().qualifiedName() + " (row key null)");
        }
        Object[] values = rows.values(record); // before the row's count: a function that throws adds no write
        String keyText = String.valueOf(rowKey);
        if (running.segments.isEmpty() || !running.segmentKeys.add(keyText)) {
            running.segmentKeys.clear();
            running.segmentKeys.add(keyText);
            running.segments.add(new ArrayList<>());
        }
        running.segments
                .get(running.segments.size() - 1)
                .add(new Write(
                        new TopicPartition(record.topic(), record.partition()),
                        record.offset(),
                        token,
                        rowKey,
                        values));
    }

    /**
     * Writes the unit's row updates in segments, in the order of their records: a segment is a run of
     * consecutive writes whose row keys differ (a key seen again begins the next one), so that a segment can be
     * one statement, and a row's writes reach it in the order of their records (a segment is written before the
     * next). A segment of {@value #MIN_STATEMENT_ROWS} rows or more whose values all reach their columns
     * through a batch as they bind one by one ({@link #travelsAsBound}) is one fenced batch statement ({@link
     * FencedWriter#tryBatch(Handle, FencedBatch)}, in the unit's transaction, under a savepoint: a few
     * microseconds a row); any other segment is a JDBC batch of single-row fenced updates, in record order (one
     * statement a row, each about twice a batch row's cost, but no statement of its own to set up). A batch
     * statement that fails, or cannot give every row an answer (a trigger that skipped an update the row
     * admitted; two spellings of one row's key, such as {@code "7"} and {@code "07"} for a number, which the
     * statement refuses as one key given twice), is undone to its savepoint and its segment written as
     * single-row updates, whose answers are the reference. Either way each update applies only if the row's
     * token admits the record's, in the statement that writes it.
     *
     * @return the refused writes, in the order their records were handled
     */
    @Override
    public List<Refusal> finishUnit(Handle transaction) {
        Unit running = unitOf(transaction);
        // in record order: the segments are, and so is each segment's share
        List<Refusal> refusals = new ArrayList<>();
        int savepoints = 0;
        for (List<Write> segment : running.segments) {
            // at most MAX_SEGMENTS savepoints a unit, even when one poll brought more segments
            FencedBatch batch =
                    segment.size() >= MIN_STATEMENT_ROWS && savepoints < MAX_SEGMENTS ? batchOf(segment) : null;
            savepoints += batch == null ? 0 : 1;
            List<WriteOutcome> outcomes = batch == null ? null : inSavepoint(transaction, batch);
            if (outcomes != null) {
                BATCH_STATEMENTS.incrementAndGet();
                for (int i = 0; i < segment.size(); i++) {
                    if (outcomes.get(i) instanceof WriteOutcome.Rejected rejected) {
                        Write write = segment.get(i);
                        refusals.add(new Refusal(write.partition(), write.offset(), rejected.storedToken()));
                    }
                }
            } else {
                refusedIn(transaction.getConnection(), segment, refusals);
            }
            for (Write write : segment) {
                running.rowHolds.merge(String.valueOf(write.rowKey()), write.token(), Math::max);
            }
        }
        running.segments.clear();
        running.segmentKeys.clear();
        return refusals;
    }

    /**
     * The batch's outcomes, or null if it was undone to its savepoint: it failed, or some row was neither
     * applied nor rejected (no row: the single-row update reports it, naming the record).
     *
     * @throws WatermarkStoreException if the savepoint could not be set or gone back to (the connection failed)
     */
    private List<WriteOutcome> inSavepoint(Handle transaction, FencedBatch batch) {
        Connection connection = transaction.getConnection();
        Savepoint savepoint;
        try {
            savepoint = connection.setSavepoint();
        } catch (SQLException e) {
            throw new WatermarkStoreException(
                    "could not set a savepoint before the unit's fenced batch of " + batch.size() + " rows of "
                            + rows.table().qualifiedName() + ": " + e.getMessage(),
                    e);
        }
        RuntimeException failure = null;
        try {
            List<WriteOutcome> outcomes = writer(transaction).tryBatch(transaction, batch);
            if (outcomes.stream()
                    .allMatch(o -> o instanceof WriteOutcome.Applied || o instanceof WriteOutcome.Rejected)) {
                connection.releaseSavepoint(savepoint);
                return outcomes;
            }
        } catch (RuntimeException e) {
            failure = e;
        } catch (SQLException e) {
            failure = new WatermarkStoreException(
                    "could not release the savepoint of the unit's fenced batch: " + e.getMessage(), e);
        }
        try {
            connection.rollback(savepoint);
        } catch (SQLException e) {
            WatermarkStoreException lost = new WatermarkStoreException(
                    "the unit's fenced batch of " + batch.size()
                            + " rows of " + rows.table().qualifiedName() + " could not be undone to its savepoint: "
                            + e.getMessage(),
                    failure != null ? failure : e);
            if (failure != null) {
                lost.addSuppressed(e);
            }
            throw lost;
        }
        if (fallbacksLogged++ == 0) {
            LOG.warn(
                    "a fenced batch of {} rows of {} was undone to its savepoint and is written row by row (logged"
                            + " once; later ones at DEBUG)",
                    batch.size(),
                    rows.table().qualifiedName(),
                    failure);
        } else {
            LOG.debug(
                    "a fenced batch of {} rows of {} was undone to its savepoint and is written row by row",
                    batch.size(),
                    rows.table().qualifiedName(),
                    failure);
        }
        return null;
    }

    /**
     * A unit ends once it holds {@value #MAX_SEGMENTS} segments, after the poll it is in. So no row takes more
     * than that many writes in one unit but for a poll's own records: each update of a row that the same
     * transaction updated before costs more than the one before (PostgreSQL keeps every version until the
     * transaction ends; on {@code bench/run kafka-postgres --keys 31} a one-second unit, about 1,900 updates a
     * row, wrote 60,000 records in 21 s). A unit also sets no more than that many savepoints for its batch
     * statements, whatever one poll brought ({@link #finishUnit} writes the segments past them row by row):
     * PostgreSQL caches 64 subtransactions of a transaction per backend, and past them every snapshot of every
     * session grows costlier.
     */
    @Override
    public boolean unitFull() {
        Unit running = unit;
        return running != null && running.segments.size() >= MAX_SEGMENTS;
    }

    /** Segments written as one batch statement so far, by every instance in this JVM; for tests. */
    public static long batchStatementsForTest() {
        return BATCH_STATEMENTS.get();
    }

    /** The segment as one fenced batch, or null if one of its values (or keys) does not travel in one as bound. */
    private FencedBatch batchOf(List<Write> segment) {
        FencedBatch.Builder batch =
                FencedBatch.builder(rows.table()).columns(rows.columns().toArray(String[]::new));
        try {
            for (Write write : segment) {
                Object[] values = write.values();
                for (int i = 0; i < values.length; i++) {
                    if (!travelsAsBound(values[i], columnTypes[i])) {
                        return null;
                    }
                }
                batch.add(write.token(), RowKey.of(write.rowKey()), values);
            }
        } catch (IllegalArgumentException e) {
            // a value of a type without a text form PostgreSQL reads back, or two row keys the batch counts as
            // one row: the single-row updates bind each value as JDBC does
            return null;
        }
        return batch.build();
    }

    /**
     * Whether the value reaches a column of this type the same through a batch (a {@code bigint[]} or {@code
     * text[]} element cast to the type) as through the single-row update ({@code setObject}, then {@code
     * CAST(? AS type)}), by casts built into PostgreSQL, which no one can redefine: a string into a text column
     * ({@code varchar} or {@code text} to it), a whole number into a numeric or text column ({@code int4} or
     * {@code int8} either way, cast alike), a boolean or a UUID into its own type or text. Not a string into
     * any other type (a cast a user defined from {@code text} but not from {@code varchar}, or the other way
     * round, would apply to one path only), a floating-point number (its text form and its binary value round
     * differently), a date or time (an offset is dropped from text for a {@code timestamp}), or anything else.
     */
    static boolean travelsAsBound(Object value, String columnType) {
        boolean text = TEXT_TYPES.contains(columnType);
        if (value == null) {
            return true;
        }
        if (value instanceof String) {
            return text;
        }
        if (value instanceof Long || value instanceof Integer || value instanceof Short) {
            return text || WHOLE_NUMBER_TYPES.contains(columnType);
        }
        if (value instanceof Boolean) {
            return text || columnType.equals("boolean");
        }
        if (value instanceof UUID) {
            return text || columnType.equals("uuid");
        }
        return false;
    }

    private FencedWriter writer(Handle transaction) {
        if (writer == null) {
            writer = FencedWriter.builder(transaction.getJdbi()).policy(policy).build();
        }
        return writer;
    }

    /** The segment as single-row fenced updates in one JDBC batch; adds its refused writes' refusals. */
    private void refusedIn(Connection connection, List<Write> segment, List<Refusal> refusals) {
        int[] counts;
        try (PreparedStatement statement = connection.prepareStatement(update)) {
            for (Write write : segment) {
                int p = 1;
                for (Object value : write.values()) {
                    statement.setObject(p++, value);
                }
                statement.setLong(p++, write.token());
                statement.setObject(p++, write.rowKey());
                statement.setLong(p, write.token());
                statement.addBatch();
            }
            counts = statement.executeBatch();
        } catch (SQLException e) {
            throw new WatermarkStoreException(
                    "could not write the unit's " + segment.size() + " fenced row updates to "
                            + rows.table().qualifiedName() + ": " + e.getMessage(),
                    e);
        }
        List<Write> refused = new ArrayList<>();
        for (int i = 0; i < segment.size(); i++) {
            if (counts[i] != 1 && counts[i] != 0) {
                throw new IllegalStateException(
                        "the update of one row of " + rows.table().qualifiedName() + " counted " + counts[i]);
            }
            if (counts[i] == 0) {
                refused.add(segment.get(i));
            }
        }
        if (refused.isEmpty()) {
            return;
        }
        Map<String, Long> stored =
                rowTokens(connection, refused.stream().map(Write::rowKey).toList());
        for (Write write : refused) {
            Long token = stored.get(String.valueOf(write.rowKey()));
            if (token == null || token < write.token()) {
                // no row, or a row that refused a newer token (a trigger that skipped the update?): the record is
                // neither applied nor stale; fail closed, the unit rolls back
                throw notWritten(write, token);
            }
            refusals.add(new Refusal(write.partition(), write.offset(), token));
        }
    }

    /** A write that was neither applied nor refused as stale: no row (token null), or a row holding an older one. */
    private RecordHandlingException notWritten(Write write, Long token) {
        return new RecordHandlingException(
                write.partition(),
                write.offset(),
                write.token(),
                new IllegalStateException(
                        token == null
                                ? "no row of " + rows.table().qualifiedName() + " has " + rows.keyColumn() + " = "
                                        + write.rowKey() + ": a fenced row handler updates existing rows only"
                                : "row " + write.rowKey() + " of "
                                        + rows.table().qualifiedName() + " refused token " + write.token()
                                        + " while holding " + token));
    }

    /** The tokens the rows of these keys hold, by the key's text form; a key without a row is left out. */
    private Map<String, Long> rowTokens(Connection connection, Collection<?> rowKeys) {
        String[] texts = rowKeys.stream().map(String::valueOf).distinct().toArray(String[]::new);
        Map<String, Long> found = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(rowTokens)) {
            Array array = connection.createArrayOf("text", texts);
            try {
                statement.setArray(1, array);
                try (ResultSet result = statement.executeQuery()) {
                    while (result.next()) {
                        found.put(result.getString(1), result.getLong(2));
                    }
                }
            } finally {
                array.free();
            }
        } catch (SQLException e) {
            throw new WatermarkStoreException(
                    "could not read the tokens of " + texts.length + " rows of "
                            + rows.table().qualifiedName() + ": " + e.getMessage(),
                    e);
        }
        return found;
    }

    /** The progress without the watermarks that rows hold: a save writes only what no row carries. */
    private List<PartitionProgress> withoutRowWatermarks(List<PartitionProgress> progress, Unit running) {
        if (running.rowHolds.isEmpty()) {
            return progress;
        }
        List<PartitionProgress> kept = new ArrayList<>(progress.size());
        for (PartitionProgress p : progress) {
            Map<Bytes, Long> raised = new HashMap<>();
            for (Map.Entry<Bytes, Long> watermark : p.raisedWatermarks().entrySet()) {
                String row = rowKeyText(p.partition().topic(), watermark.getKey());
                Long held = row == null ? null : running.rowHolds.get(row);
                if (held == null || held < watermark.getValue()) {
                    raised.put(watermark.getKey(), watermark.getValue());
                }
            }
            kept.add(new PartitionProgress(p.partition(), p.expectedOffset(), p.nextOffset(), raised));
        }
        return kept;
    }

    /** The row key's text form for a record key, or null if the key cannot be read or maps to no row. */
    private String rowKeyText(String topic, Bytes key) {
        try {
            Object rowKey = rows.rowKey(keyDeserializer.deserialize(topic, key.get()));
            return rowKey == null ? null : String.valueOf(rowKey);
        } catch (RuntimeException e) {
            return null; // such a record never reaches the handler: the step dead-letters it
        }
    }

    /** Per key, the greater of its row's token and its stored watermark. Inside a unit of work only. */
    @Override
    public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        return loadKeys(groupId, partition, keys, Long.MAX_VALUE).watermarks();
    }

    /** {@link #loadWatermarks}, with the store's applied offsets. Inside a unit of work only. */
    @Override
    public LoadedKeys loadKeys(String groupId, TopicPartition partition, Collection<Bytes> keys, long from) {
        LoadedKeys stored = storedKeys.loadKeys(groupId, partition, keys, from);
        return new LoadedKeys(withRowTokens(partition, keys, stored.watermarks()), stored.appliedOffsets());
    }

    private Map<Bytes, Long> withRowTokens(TopicPartition partition, Collection<Bytes> keys, Map<Bytes, Long> stored) {
        Map<Bytes, Long> found = new HashMap<>(stored);
        Map<String, List<Bytes>> byRow = new HashMap<>();
        for (Bytes key : keys) {
            String row = rowKeyText(partition.topic(), key);
            if (row != null) {
                byRow.computeIfAbsent(row, r -> new ArrayList<>()).add(key);
            }
        }
        if (byRow.isEmpty()) {
            return found;
        }
        Unit running = unit;
        if (running == null) {
            throw new IllegalStateException("the rows of " + rows.table().qualifiedName()
                    + " are read inside a unit of work, in its transaction");
        }
        for (Map.Entry<String, Long> row :
                rowTokens(running.handle.getConnection(), byRow.keySet()).entrySet()) {
            if (row.getValue() > 0) {
                for (Bytes key : byRow.get(row.getKey())) {
                    found.merge(key, row.getValue(), Math::max);
                }
            }
        }
        return found;
    }

    private Unit unitOf(Handle transaction) {
        Unit running = unit;
        if (running == null || running.handle != transaction) {
            throw new IllegalStateException("a fenced row handler runs inside its own store's unit of work only");
        }
        return running;
    }

    @Override
    public boolean loadsLazily() {
        return true; // a key's watermark is read with its row
    }

    /** The stored watermarks only: the rows' tokens are read key by key ({@link #loadWatermarks}). */
    @Override
    public PartitionState load(String groupId, TopicPartition partition) {
        return store.load(groupId, partition);
    }

    @Override
    public long loadOffset(String groupId, TopicPartition partition) {
        return store.loadOffset(groupId, partition);
    }

    @Override
    public void lockPartition(Handle transaction, String groupId, TopicPartition partition, long expectedOffset) {
        store.lockPartition(transaction, groupId, partition, expectedOffset);
    }
}
