package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.kafka.FencedRowHandler;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;

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
    private final FencedRowWrites writes;
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
        this.writes = new FencedRowWrites(rows, policy);
    }

    /** The most segments a unit takes before it ends ({@link #unitFull}): as many as it sets savepoints for. */
    public static final int MAX_SEGMENTS = FencedRowWrites.MAX_SAVEPOINTS;

    /** The smallest segment written as one batch statement; smaller ones are single-row updates. */
    public static final int MIN_STATEMENT_ROWS = FencedRowWrites.MIN_STATEMENT_ROWS;

    private static final class Unit {
        final Handle handle;
        // the unit's writes not sent yet, by segment, in record order
        final List<List<FencedRowWrites.Write>> segments = new ArrayList<>();
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
                .add(new FencedRowWrites.Write(
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
     * through a batch as they bind one by one ({@link FencedRowWrites#travelsAsBound}) is one fenced batch statement ({@link
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
        List<Refusal> refusals = writes.write(transaction, running.segments, running.rowHolds);
        running.segments.clear();
        running.segmentKeys.clear();
        return refusals;
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
        return FencedRowWrites.batchStatements();
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
                writes.rowTokens(running.handle.getConnection(), byRow.keySet()).entrySet()) {
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

    /** The store's: without it a topic created again past the stored offset would be read on from there. */
    @Override
    public Optional<Uuid> recordTopicId(String groupId, String topic, Uuid currentId) {
        return store.recordTopicId(groupId, topic, currentId);
    }

    @Override
    public void lockPartition(Handle transaction, String groupId, TopicPartition partition, long expectedOffset) {
        store.lockPartition(transaction, groupId, partition, expectedOffset);
    }
}
