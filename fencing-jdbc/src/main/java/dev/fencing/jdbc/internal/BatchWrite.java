package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedWriteException;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.argument.Argument;
import org.jdbi.v3.core.mapper.RowMapper;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;

/**
 * A {@link FencedBatch} as one statement on a handle: either the bare fenced UPDATE of all its rows, which
 * only says whether every row was written, or the reporting statement, which writes and returns the rows it
 * did not write with their stored tokens. Transactions are the caller's (DefaultFencedWriter's). Thread-safe.
 */
final class BatchWrite {
    private final FencePolicy policy;
    private final StatementCache statements;
    /**
     * Each table's unique index as last found by the full check, which the bare statement confirms cheaply.
     * Bounded like the statement cache: past the bound, tables not in it are looked up for every batch.
     */
    private final ConcurrentMap<FencedTable, KeyIndex> keyIndexes = new ConcurrentHashMap<>();

    BatchWrite(FencePolicy policy, StatementCache statements) {
        this.policy = policy;
        this.statements = statements;
    }

    /**
     * The bare fenced UPDATE of every row: {@code true} when every input row wrote exactly one row, and
     * nothing but one number is read back. On {@code false} the statement failed and wrote nothing, but
     * PostgreSQL undoes it only by ending an auto-commit statement's transaction, or the caller's
     * transaction, or by a rollback to a savepoint set before it: the caller does one of these, then runs
     * the reporting statement, which also fails the batch when an input row wrote more than one row (the
     * key columns do not name one row: the unique key FencedTable checked is gone).
     *
     * <p>The statement relies on the table's unique index found by the full check ({@link KeyIndex#find},
     * on this handle the first time), which it confirms in itself. Without one it does not run and says
     * {@code false}; when its failure says the index changed (dropped, replaced, rebuilt by REINDEX
     * CONCURRENTLY), the index is looked up again the next time.
     */
    boolean writeAll(Handle handle, FencedBatch batch) {
        FencedTable table = batch.table();
        KeyIndex index = keyIndexes.get(table);
        if (index == null) {
            index = KeyIndex.find(handle, table).orElse(null);
            if (index == null) {
                return false;
            }
            if (keyIndexes.size() < StatementCache.MAX_CACHED_STATEMENTS) {
                keyIndexes.put(table, index);
            }
        }
        KeyIndex found = index;
        BatchShape shape = BatchShape.of(batch);
        String sql = statements.get(
                shape.key("bare batch", batch, found),
                () -> FencedSql.batch(
                        table,
                        batch.columns(),
                        policy,
                        shape.integralKeys,
                        shape.integralValues,
                        shape.oneToken,
                        found));
        Query query = StatementParser.query(handle, sql);
        bind(query, batch, shape, null);
        query.bind(FencedSql.BATCH_SIZE, LibraryArguments.ofLong(batch.size()));
        try {
            query.map(SHORTFALL_COLUMN).one();
            return true;
        } catch (UnableToExecuteStatementException e) {
            Matcher shortfall = shortfall(e);
            if (shortfall == null) {
                throw unreadableValue(e, batch);
            }
            if (shortfall.group(1) != null) {
                keyIndexes.remove(table, found);
            }
            // Not every row was written once: what happened is for the reporting statement to find out (it
            // also fails the batch for a key that names two rows). The counts in the message are not trusted:
            // a user's value that failed the same cast could carry the same text (and at worst make the
            // writer look the index up again).
            return false;
        }
    }

    /** The bare statement's one column, read without looking a mapper up. */
    private static final RowMapper<Long> SHORTFALL_COLUMN = (rs, ctx) -> rs.getLong(1);

    private static final Pattern SHORTFALL = Pattern.compile(Pattern.quote(FencedSql.BATCH_SHORTFALL)
            + "\\d+ rows for \\d+ keys(" + Pattern.quote(FencedSql.KEY_INDEX_CHANGED) + ")?;");

    /**
     * Whether the bare statement failed as it does when it did not write every row once. Any other
     * failure, and a user's value that merely looks like that one, is thrown or found again by the reporting
     * statement, which runs the same write.
     */
    private static Matcher shortfall(UnableToExecuteStatementException e) {
        return ownFailure(e, SHORTFALL);
    }

    /**
     * The match of {@code text} in the message of the statement's failure to cast text to a number (SQLSTATE
     * 22P02), the way the batch statements fail on purpose; null when the failure is another.
     */
    private static Matcher ownFailure(UnableToExecuteStatementException e, Pattern text) {
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql && "22P02".equals(sql.getSQLState()) && sql.getMessage() != null) {
                Matcher matcher = text.matcher(sql.getMessage());
                if (matcher.find()) {
                    return matcher;
                }
            }
        }
        return null;
    }

    /**
     * A value the statement cannot read as its column's type (SQLSTATE class 22, data exception) fails the whole
     * batch, and PostgreSQL's error quotes the value ({@code invalid input syntax for type integer: "3x"}) but
     * names neither its row nor its column: the first row and column, in row order, whose value travels as that
     * quoted text (a column of a text type, which reads any text, aside), as a {@link FencedWriteException}
     * naming them. An error that quotes no value, {@code integer out of range} or {@code smallint out of range} of a
     * whole number that travels in a {@code bigint[]}, names the first row and column, in row order, of that type
     * whose value is outside its range. The failure as it came when none does.
     */
    private static RuntimeException unreadableValue(UnableToExecuteStatementException e, FencedBatch batch) {
        String message = null;
        for (Throwable cause = e.getCause(); cause != null && message == null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql
                    && sql.getSQLState() != null
                    && sql.getSQLState().startsWith("22")
                    && sql.getMessage() != null) {
                message = sql.getMessage().lines().findFirst().orElse("");
            }
        }
        if (message == null) {
            return e;
        }
        FencedTable table = batch.table();
        List<String> keyColumns = table.keyColumns();
        Matcher range = OUT_OF_RANGE.matcher(message);
        String rangeType = range.find() ? range.group(1) : null;
        for (int row = 0; row < batch.size(); row++) {
            for (int k = 0; k < keyColumns.size(); k++) {
                if (!readsAnyText(table, keyColumns.get(k)) && quotes(message, batch.keyValues(k), row)
                        || outOfRange(rangeType, table, keyColumns.get(k), batch.keyValues(k), row)) {
                    return unreadable(e, message, batch, row, keyColumns.get(k));
                }
            }
            for (int c = 0; c < batch.columns().size(); c++) {
                if (!readsAnyText(table, batch.columns().get(c)) && quotes(message, batch.values(c), row)
                        || outOfRange(rangeType, table, batch.columns().get(c), batch.values(c), row)) {
                    return unreadable(e, message, batch, row, batch.columns().get(c));
                }
            }
        }
        return e;
    }

    /** PostgreSQL's error for a whole number that its column's type cannot hold, which quotes no value. */
    private static final Pattern OUT_OF_RANGE = Pattern.compile("\\b(smallint|integer) out of range");

    /**
     * Whether value {@code row} of a column of {@code type} ({@code smallint} or {@code integer}; null: none) that
     * travels as whole numbers is outside the type's range.
     */
    private static boolean outOfRange(String type, FencedTable table, String column, List<Object> values, int row) {
        if (type == null || !type.equals(table.columnType(column).orElse("")) || !BatchValues.integral(values)) {
            return false;
        }
        Object value = values.get(row);
        if (value == null) {
            return false;
        }
        long number = ((Number) value).longValue();
        return "smallint".equals(type)
                ? number < Short.MIN_VALUE || number > Short.MAX_VALUE
                : number < Integer.MIN_VALUE || number > Integer.MAX_VALUE;
    }

    /** A column of a text type reads any text, so its value is never the one the error quotes. */
    private static boolean readsAnyText(FencedTable table, String column) {
        return TEXT_TYPES.contains(table.columnType(column).orElse(""));
    }

    /** As {@link FencedTable#columnType} names them: {@code char(n)} is {@code bpchar} there. */
    private static final Set<String> TEXT_TYPES = Set.of("text", "character varying", "bpchar", "citext", "name");

    /** Whether {@code message} quotes the text that value {@code row} of a column travelling as text is sent as. */
    private static boolean quotes(String message, List<Object> values, int row) {
        Object value = values.get(row);
        return value != null
                && !BatchValues.integral(values)
                && message.contains("\"" + BatchValues.text(value) + "\"");
    }

    private static FencedWriteException unreadable(
            UnableToExecuteStatementException e, String message, FencedBatch batch, int row, String column) {
        RowKey key = batch.keys().get(row);
        int k = batch.table().keyColumns().indexOf(column);
        Object value = k >= 0
                ? batch.keyValues(k).get(row)
                : batch.values(batch.columns().indexOf(column)).get(row);
        return new FencedWriteException(
                "fenced batch on " + batch.table().qualifiedName() + " failed at " + BatchValues.rowName(row)
                        + " (key " + key + "), column " + column + ", whose value " + value + " the database cannot"
                        + " read as the column's type (" + message + "); the statement was undone",
                batch.table().qualifiedName(),
                key,
                batch.token(row),
                e);
    }

    private static FencedWriteException keyNamesTwoRows(FencedBatch batch, String wrote, Throwable cause) {
        return new FencedWriteException(
                "fenced batch on " + batch.table().qualifiedName() + " wrote " + wrote + ": its key columns "
                        + batch.table().keyColumns()
                        + " no longer name one row (dropped unique key?); the statement was undone",
                batch.table().qualifiedName(),
                null,
                0,
                cause);
    }

    /**
     * The reporting statement's own failure for a bad batch, recognised by its nonce, as a {@link
     * FencedWriteException}; any other failure as it came.
     */
    private static RuntimeException badBatch(
            UnableToExecuteStatementException e, FencedBatch batch, List<Integer> pending, long nonce) {
        Pattern failure = Pattern.compile(Pattern.quote(FencedSql.BATCH_FAILURE + nonce + ": ") + "(?:("
                + Pattern.quote(FencedSql.KEY_NAMES_ROWS) + ")|key given twice, input row (\\d+))");
        Matcher matcher = ownFailure(e, failure);
        if (matcher == null) {
            return unreadableValue(e, batch);
        }
        if (matcher.group(1) != null) {
            return keyNamesTwoRows(batch, "more rows than keys", e);
        }
        int index = pending.get(Integer.parseInt(matcher.group(2)) - 1);
        RowKey key = batch.keys().get(index);
        return new FencedWriteException(
                "fenced batch on " + batch.table().qualifiedName() + " gives the row of key " + key
                        + " twice (" + BatchValues.rowName(index) + " and another whose key the database reads as"
                        + " equal, such as '7' and 7L); the statement was undone",
                batch.table().qualifiedName(),
                key,
                batch.token(index),
                e);
    }

    /** Every row applied, as an unmodifiable list: one outcome shared by all rows when they share a token. */
    static List<WriteOutcome> allApplied(FencedBatch batch) {
        if (batch.hasOneToken()) {
            return Collections.nCopies(batch.size(), new WriteOutcome.Applied(batch.token(0)));
        }
        WriteOutcome[] outcomes = new WriteOutcome[batch.size()];
        for (int i = 0; i < outcomes.length; i++) {
            outcomes[i] = new WriteOutcome.Applied(batch.token(i));
        }
        return Collections.unmodifiableList(Arrays.asList(outcomes));
    }

    /**
     * The reporting statement: writes what the policy admits and returns one outcome per row. A row whose
     * snapshot admitted the token but was not written (changed while the statement ran) is written again,
     * alone with the others like it, up to {@link SingleRowWrite#MAX_ATTEMPTS} times; the rows written by an
     * earlier attempt stay written, so a failure after that leaves them in the handle's transaction.
     *
     * @throws FencedWriteException when an input row wrote more than one row
     */
    List<WriteOutcome> writeAndReport(Handle handle, FencedBatch batch) {
        FencedTable table = batch.table();
        WriteOutcome[] outcomes = new WriteOutcome[batch.size()];
        List<Integer> pending = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            pending.add(i);
        }
        BatchShape shape = BatchShape.of(batch);
        String sql = statements.get(
                shape.key("batch", batch, null),
                () -> FencedSql.batch(
                        table,
                        batch.columns(),
                        policy,
                        shape.integralKeys,
                        shape.integralValues,
                        shape.oneToken,
                        null));
        for (int attempt = 1; !pending.isEmpty(); attempt++) {
            Query query = StatementParser.query(handle, sql);
            bind(query, batch, shape, pending);
            query.bind(FencedSql.BATCH_SIZE, LibraryArguments.ofLong(pending.size()));
            long nonce = ThreadLocalRandom.current().nextLong();
            query.bind(FencedSql.BATCH_NONCE, LibraryArguments.ofLong(nonce));
            // only the rows that were not written come back; every other pending row was applied
            List<long[]> rows;
            try {
                rows = query.map((rs, ctx) -> {
                            long ord = rs.getLong("ord");
                            long stored = rs.getLong("stored");
                            return rs.wasNull() ? new long[] {ord} : new long[] {ord, stored};
                        })
                        .list();
            } catch (UnableToExecuteStatementException e) {
                throw badBatch(e, batch, pending, nonce);
            }
            boolean[] notWritten = new boolean[pending.size()];
            List<Integer> again = new ArrayList<>();
            for (long[] row : rows) {
                int position = (int) row[0] - 1;
                notWritten[position] = true;
                int index = pending.get(position);
                long token = batch.token(index);
                if (row.length == 1) {
                    outcomes[index] = new WriteOutcome.NotFound(token);
                } else if (!policy.admits(row[1], token)) {
                    outcomes[index] = new WriteOutcome.Rejected(row[1], token);
                } else if (attempt < SingleRowWrite.MAX_ATTEMPTS) {
                    again.add(index);
                } else {
                    throw OutcomeExceptions.changedConcurrently(
                            table.qualifiedName(), batch.keys().get(index), token, SingleRowWrite.MAX_ATTEMPTS);
                }
            }
            for (int position = 0; position < notWritten.length; position++) {
                if (!notWritten[position]) {
                    int index = pending.get(position);
                    outcomes[index] = new WriteOutcome.Applied(batch.token(index));
                }
            }
            pending = again;
        }
        return Collections.unmodifiableList(Arrays.asList(outcomes));
    }

    /** Binds the token(s), keys and values of the batch's {@code rows}, or of all its rows when null. */
    private static void bind(SqlStatement<?> statement, FencedBatch batch, BatchShape shape, List<Integer> rows) {
        if (shape.oneToken) {
            statement.bind(FencedSql.TOKEN, LibraryArguments.ofLong(batch.token(0)));
        } else {
            statement.bind(FencedSql.BATCH_TOKENS, new TypedArray("bigint", BatchValues.longs(batch.tokens(), rows)));
        }
        for (int k = 0; k < shape.integralKeys.length; k++) {
            bindColumn(statement, FencedSql.batchKeys(k), shape.integralKeys[k], batch.keyValues(k), rows);
        }
        for (int c = 0; c < shape.integralValues.length; c++) {
            bindColumn(statement, FencedSql.batchValues(c), shape.integralValues[c], batch.values(c), rows);
        }
    }

    private static void bindColumn(
            SqlStatement<?> statement, String name, boolean integral, List<Object> values, List<Integer> rows) {
        statement.bind(
                name,
                integral
                        ? new TypedArray("bigint", BatchValues.longs(values, rows))
                        : new TypedArray("text", BatchValues.texts(values, rows)));
    }

    /**
     * An array bound as an array of its own element type. Jdbi's {@code bindArray} hands the driver an
     * {@code Object[]}, which pgjdbc can only send as text, every number printed and parsed again; a {@code
     * Long[]} it sends in binary. Measured on a 1,000-row batch: about 0.2 ms of the client's time.
     */
    private record TypedArray(String typeName, Object[] elements) implements Argument {
        @Override
        public void apply(int position, PreparedStatement statement, StatementContext ctx) throws SQLException {
            java.sql.Array array = statement.getConnection().createArrayOf(typeName, elements);
            ctx.addCleanable(array::free);
            statement.setArray(position, array);
        }

        @Override
        public String toString() {
            return typeName + "[] of " + elements.length;
        }
    }

    /** How a batch's columns travel and whether it has one token; part of its statement's cache key. */
    private static final class BatchShape {
        final boolean[] integralKeys;
        final boolean[] integralValues;
        final boolean oneToken;

        private BatchShape(boolean[] integralKeys, boolean[] integralValues, boolean oneToken) {
            this.integralKeys = integralKeys;
            this.integralValues = integralValues;
            this.oneToken = oneToken;
        }

        static BatchShape of(FencedBatch batch) {
            boolean[] integralKeys = new boolean[batch.table().keyColumns().size()];
            for (int k = 0; k < integralKeys.length; k++) {
                integralKeys[k] = BatchValues.integral(batch.keyValues(k));
            }
            boolean[] integralValues = new boolean[batch.columns().size()];
            for (int c = 0; c < integralValues.length; c++) {
                integralValues[c] = BatchValues.integral(batch.values(c));
            }
            return new BatchShape(integralKeys, integralValues, batch.hasOneToken());
        }

        StatementCache.Key key(String kind, FencedBatch batch, KeyIndex index) {
            return new StatementCache.Key(
                    kind,
                    batch.table(),
                    List.of(new ShapeKey(batch.columns(), this, index == null ? NO_INDEX : index)));
        }

        /** The shape's part of a cache key, compared by content (the key index's hash is computed once). */
        private record ShapeKey(List<String> columns, BatchShape shape, Object index) {
            @Override
            public boolean equals(Object other) {
                return other instanceof ShapeKey that
                        && columns.equals(that.columns)
                        && Arrays.equals(shape.integralKeys, that.shape.integralKeys)
                        && Arrays.equals(shape.integralValues, that.shape.integralValues)
                        && shape.oneToken == that.shape.oneToken
                        && index.equals(that.index);
            }

            @Override
            public int hashCode() {
                return ((columns.hashCode() * 31 + Arrays.hashCode(shape.integralKeys)) * 31
                                        + Arrays.hashCode(shape.integralValues))
                                * 31
                        + Boolean.hashCode(shape.oneToken) * 7
                        + index.hashCode();
            }
        }

        private static final Object NO_INDEX = new Object();
    }
}
