package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedRowHandler;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.WatermarkStoreException;
import dev.fencing.kafka.internal.UnitEffects.Refusal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a unit's row updates for {@link FencedRowUnits}, segment by segment, in the unit's transaction, and
 * reports the ones a row refused; also reads the tokens rows hold. Each update applies only if the row's token
 * admits the record's, in the statement that writes it. Poll thread only.
 */
final class FencedRowWrites {
    /** The smallest segment written as one batch statement; smaller ones are single-row updates. */
    static final int MIN_STATEMENT_ROWS = 32;

    /**
     * The most savepoints one unit sets for its batch statements (segments past them are written row by row):
     * PostgreSQL caches 64 subtransactions of a transaction per backend, and past them every snapshot of every
     * session grows costlier.
     */
    static final int MAX_SAVEPOINTS = 32;

    private static final Set<String> TEXT_TYPES = Set.of("text", "character varying", "bpchar");
    private static final Set<String> WHOLE_NUMBER_TYPES =
            Set.of("smallint", "integer", "bigint", "numeric", "real", "double precision");
    private static final Logger LOG = LoggerFactory.getLogger(FencedRowWrites.class);

    /** Segments written as one batch statement, by every instance (for tests: which path a segment took). */
    private static final AtomicLong BATCH_STATEMENTS = new AtomicLong();

    /** One accepted record's row update, waiting for the end of its unit. */
    record Write(TopicPartition partition, long offset, long token, Object rowKey, Object[] values) {}

    private final FencedRowHandler<?, ?> rows;
    private final String update;
    private final String rowTokens;
    private final FencePolicy policy;
    private final String[] columnTypes; // of rows.columns(), in order
    private FencedWriter writer; // made from the first unit's handle, poll thread only
    private long fallbacksLogged; // batches undone to their savepoints, poll thread only

    FencedRowWrites(FencedRowHandler<?, ?> rows, FencePolicy policy) {
        this.rows = rows;
        this.policy = policy;
        FencedTable table = rows.table();
        this.columnTypes = rows.columns().stream()
                .map(column -> table.columnType(column).orElseThrow())
                .toArray(String[]::new);
        String fence = quoted(table.fenceColumn());
        String key = quoted(rows.keyColumn());
        // casts name the type with its schema: a session's search path must not make the key name another row
        String keyType = table.castType(rows.keyColumn()).orElseThrow();
        // the key compared as fencing-jdbc's statements compare it (the equality of its unique index's class)
        String keyCondition = table.keyEquals(rows.keyColumn(), key, "CAST(? AS " + keyType + ")");
        // ONLY: never a row of an inheritance child added after the table was checked (a partitioned table's
        // rows are all in its partitions)
        String target = table.partitioned() ? table.quotedName() : "ONLY " + table.quotedName();
        StringBuilder sql = new StringBuilder("UPDATE ").append(target).append(" SET ");
        for (String column : rows.columns()) {
            sql.append(quoted(column))
                    .append(" = CAST(? AS ")
                    .append(table.castType(column).orElseThrow())
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

    private static String quoted(String identifier) {
        return '"' + identifier + '"'; // FencedTable allows only [a-z_][a-z0-9_]*
    }

    /**
     * Writes the segments in order (see {@link FencedRowUnits#finishUnit}), noting in {@code rowHolds}, per row
     * key's text form, a token each written or refusing row holds at least.
     *
     * @return the refused writes, in the order their records were handled
     */
    List<Refusal> write(Handle transaction, List<List<Write>> segments, Map<String, Long> rowHolds) {
        // in record order: the segments are, and so is each segment's share
        List<Refusal> refusals = new ArrayList<>();
        int savepoints = 0;
        for (List<Write> segment : segments) {
            // at most MAX_SAVEPOINTS savepoints a unit, even when one poll brought more segments
            FencedBatch batch =
                    segment.size() >= MIN_STATEMENT_ROWS && savepoints < MAX_SAVEPOINTS ? batchOf(segment) : null;
            savepoints += batch == null ? 0 : 1;
            List<WriteOutcome> outcomes = batch == null ? null : inSavepoint(transaction, batch);
            if (outcomes != null) {
                BATCH_STATEMENTS.incrementAndGet();
                for (int i = 0; i < segment.size(); i++) {
                    if (outcomes.get(i) instanceof WriteOutcome.Rejected rejected) {
                        Write write = segment.get(i);
                        refusals.add(
                                new Refusal(write.partition(), write.offset(), write.token(), rejected.storedToken()));
                    }
                }
            } else {
                refusedIn(transaction.getConnection(), segment, refusals);
            }
            for (Write write : segment) {
                rowHolds.merge(String.valueOf(write.rowKey()), write.token(), Math::max);
            }
        }
        return refusals;
    }

    /** Segments written as one batch statement so far, by every instance in this JVM; for tests. */
    static long batchStatements() {
        return BATCH_STATEMENTS.get();
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
            refusals.add(new Refusal(write.partition(), write.offset(), write.token(), token));
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
    Map<String, Long> rowTokens(Connection connection, Collection<?> rowKeys) {
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
}
