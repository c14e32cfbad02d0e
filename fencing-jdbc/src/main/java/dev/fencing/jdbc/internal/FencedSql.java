package dev.fencing.jdbc.internal;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedTable;
import java.util.ArrayList;
import java.util.List;

/**
 * Statement text. Every statement carries the fence condition in its own WHERE clause and, in the same
 * statement, reports what the row held when nothing was written (read from the statement's snapshot and
 * only then, through a LATERAL subquery gated on zero rows written), so that the caller can tell a stale
 * token from a missing row or a false predicate without a read before the write.
 *
 * <p>Result columns: {@code applied} (rows written), {@code stored} (the row's token, NULL when absent or
 * when written), {@code predicate_holds}.
 */
public final class FencedSql {
    public static final String TOKEN = Bindings.RESERVED_PREFIX + "token";

    private FencedSql() {}

    public static String keyBinding(int i) {
        return Bindings.RESERVED_PREFIX + "key_" + i;
    }

    /**
     * The table as statements that read or change existing rows name it: {@code ONLY "s"."t"}, so that a
     * row of an inheritance child (the parent's key does not constrain it, and the parent's guard does not
     * see it) is never matched by key, even if a child was added after the table was checked. Not for a
     * partitioned table, whose rows are all in its partitions: ONLY would match none of them.
     */
    static String target(FencedTable table) {
        return table.partitioned() ? table.quotedName() : "ONLY " + table.quotedName();
    }

    /** {@code "k0" OPERATOR(schema.=) CAST(:fence_key_0 AS type) AND ...}, as {@link FencedTable#keyEquals} writes it */
    static String keyCondition(FencedTable table, String qualifier) {
        List<String> parts = new ArrayList<>();
        List<String> keys = table.keyColumns();
        for (int i = 0; i < keys.size(); i++) {
            String column = keys.get(i);
            parts.add(table.keyEquals(
                    column,
                    qualifier + Identifiers.quote(column),
                    "CAST(:" + keyBinding(i) + " AS " + table.castType(column).orElseThrow() + ")"));
        }
        return String.join(" AND ", parts);
    }

    /**
     * The name of the reporting statements' {@code WITH} query, the rows their write wrote. A CTE's name
     * hides a table of that name from the rest of the statement, the report's second reading of the caller's
     * predicate included (the write's own reading in the CTE does not see it): a predicate naming a table of
     * the caller's {@code applied} would be judged there against the write's rows. So the name carries the
     * library's reserved prefix, and {@link SqlFragment} refuses a fragment that names it.
     */
    static final String WRITTEN_ROWS = Bindings.RESERVED_PREFIX + "applied";

    private static String report(FencedTable table, String predicate) {
        String fence = Identifiers.quote(table.fenceColumn());
        return "SELECT written.n AS applied, target.stored, target.predicate_holds"
                + " FROM (SELECT pg_catalog.count(*) AS n FROM " + WRITTEN_ROWS + ") AS written"
                + " LEFT JOIN LATERAL (SELECT " + fence + " AS stored, "
                + (predicate == null ? "TRUE" : "coalesce((" + predicate + "), FALSE)") + " AS predicate_holds"
                + " FROM " + target(table) + " WHERE " + keyCondition(table, "") + " AND written.n " + CatalogSql.EQUALS
                + " 0)"
                + " AS target ON TRUE";
    }

    /** A fenced UPDATE; {@code setClause} may be empty (a claim sets only the fence column). */
    public static String update(FencedTable table, String setClause, String predicate, FencePolicy policy) {
        return "WITH " + WRITTEN_ROWS + " AS (" + bareUpdate(table, setClause, predicate, policy) + " RETURNING 1) "
                + report(table, predicate);
    }

    /**
     * The same fenced UPDATE without the report: a complete fenced write whose update count says only
     * whether it applied. Tried first, since applying is the common case and the bare statement costs what
     * a plain UPDATE costs; the reporting statement runs only when it wrote nothing.
     */
    public static String bareUpdate(FencedTable table, String setClause, String predicate, FencePolicy policy) {
        String fence = Identifiers.quote(table.fenceColumn());
        return "UPDATE " + target(table) + " SET "
                + (setClause.isEmpty() ? "" : setClause + ", ") + fence + " = :" + TOKEN
                + " WHERE " + keyCondition(table, "") + " AND " + fence + " " + fenceComparison(policy) + " :" + TOKEN
                + (predicate == null ? "" : " AND " + predicate);
    }

    /** The unfenced twin of {@link #update}, for comparisons (benchmarks, tests). */
    public static String plainUpdate(FencedTable table, String setClause) {
        return "UPDATE " + target(table) + " SET " + setClause + " WHERE " + keyCondition(table, "");
    }

    public static String valueBinding(int i) {
        return Bindings.RESERVED_PREFIX + "value_" + i;
    }

    /** A fenced INSERT ... ON CONFLICT DO UPDATE ... WHERE fence condition. */
    public static String upsert(FencedTable table, List<String> columns, FencePolicy policy, String extraSet) {
        return "WITH " + WRITTEN_ROWS + " AS (" + bareUpsert(table, columns, policy, extraSet) + " RETURNING 1) "
                + report(table, null);
    }

    /** The fenced upsert without the report; see {@link #bareUpdate}. */
    public static String bareUpsert(FencedTable table, List<String> columns, FencePolicy policy, String extraSet) {
        String fence = Identifiers.quote(table.fenceColumn());
        List<String> insertColumns = new ArrayList<>();
        List<String> insertValues = new ArrayList<>();
        // the key as the conflict target, with each column's collation and operator class: ON CONFLICT (k) alone
        // takes any unique index on k as its arbiter, one that compares coarser than the statements' = too
        // (a case-insensitive collation, bpchar_ops on varchar), and would update the row it finds equal
        List<String> arbiters = new ArrayList<>();
        for (int i = 0; i < table.keyColumns().size(); i++) {
            String column = table.keyColumns().get(i);
            arbiters.add(Identifiers.quote(column) + table.keyArbiter(column));
            insertColumns.add(Identifiers.quote(column));
            insertValues.add(
                    "CAST(:" + keyBinding(i) + " AS " + table.castType(column).orElseThrow() + ")");
        }
        List<String> updates = new ArrayList<>();
        for (int i = 0; i < columns.size(); i++) {
            String column = columns.get(i);
            insertColumns.add(Identifiers.quote(column));
            insertValues.add(
                    "CAST(:" + valueBinding(i) + " AS " + table.castType(column).orElseThrow() + ")");
            updates.add(Identifiers.quote(column) + " = EXCLUDED." + Identifiers.quote(column));
        }
        insertColumns.add(fence);
        insertValues.add(":" + TOKEN);
        // the offered token itself, never EXCLUDED's: EXCLUDED is the proposed row as the table's BEFORE INSERT
        // triggers left it, and a user's trigger that raised its token would let a stale write through
        updates.add(fence + " = :" + TOKEN);
        if (extraSet != null) {
            updates.add(extraSet);
        }
        return "INSERT INTO " + table.quotedName() + " AS fenced_row ("
                + String.join(", ", insertColumns) + ") VALUES (" + String.join(", ", insertValues) + ")"
                + " ON CONFLICT (" + String.join(", ", arbiters) + ") DO UPDATE SET " + String.join(", ", updates)
                + " WHERE fenced_row." + fence + " " + fenceComparison(policy) + " :" + TOKEN;
    }

    public static String batchKeys(int i) {
        return Bindings.RESERVED_PREFIX + "keys_" + i;
    }

    public static String batchValues(int i) {
        return Bindings.RESERVED_PREFIX + "values_" + i;
    }

    public static final String BATCH_TOKENS = Bindings.RESERVED_PREFIX + "tokens";

    public static final String BATCH_SIZE = Bindings.RESERVED_PREFIX + "size";

    /**
     * What the bare batch statement's error says when it did not write every row once: its value, which
     * PostgreSQL cannot read as a number, starts with this text and goes on with {@code N rows for M of K
     * keys}.
     */
    public static final String BATCH_SHORTFALL = "fenced batch wrote ";

    /** What the bare statement's failure adds when the unique index it relied on no longer stands. */
    public static final String KEY_INDEX_CHANGED = ", the unique index it relied on changed";

    /**
     * What the reporting batch statement's error says when the batch is bad: this text, the statement's
     * nonce ({@link #BATCH_NONCE}), a colon, and either {@link #KEY_NAMES_ROWS} or {@code key given twice,
     * input row N}.
     */
    public static final String BATCH_FAILURE = "fenced batch ";

    public static final String BATCH_NONCE = Bindings.RESERVED_PREFIX + "nonce";

    /** The reporting batch statement's failure when an input row wrote more than one table row. */
    public static final String KEY_NAMES_ROWS = "an input row wrote more than one row";

    /**
     * Many rows in one statement: the rows arrive as parallel arrays (see {@link BatchValues}; {@code
     * integralKeys[i]} / {@code integralValues[i]} say which travel as {@code bigint[]}), are joined to the
     * table, and each is updated only under its own fence condition. Only the rows that were NOT written
     * come back ({@code ord}, 1-based input position, and {@code stored}, the row's token or NULL when
     * absent); when every row was written once the report part does not run at all. The statement fails
     * (and so undoes itself) with SQLSTATE 22P02 and a message holding {@link #BATCH_FAILURE} and its nonce
     * when an input row wrote more than one table row or two input rows name one row. With a {@code
     * keyIndex}, the bare statement: the UPDATE alone, while that unique index on the key columns stands,
     * which returns one row when every input row wrote exactly one table row and otherwise fails (and so
     * undoes itself), with SQLSTATE 22P02 and a message holding {@link #BATCH_SHORTFALL}.
     */
    public static String batch(
            FencedTable table,
            List<String> columns,
            FencePolicy policy,
            boolean[] integralKeys,
            boolean[] integralValues,
            boolean oneToken,
            KeyIndex keyIndex) {
        String fence = Identifiers.quote(table.fenceColumn());
        List<String> arrays = new ArrayList<>();
        List<String> keyArrays = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<String> keyNames = new ArrayList<>();
        List<String> join = new ArrayList<>();
        List<String> lookup = new ArrayList<>();
        List<String> written = new ArrayList<>();
        List<String> twice = new ArrayList<>();
        for (int i = 0; i < table.keyColumns().size(); i++) {
            String column = table.keyColumns().get(i);
            String array = typedArray(batchKeys(i), integralKeys[i], table, column);
            arrays.add(array);
            keyArrays.add(array);
            names.add("key_" + i);
            keyNames.add("key_" + i);
            join.add(table.keyEquals(column, "fenced_row." + Identifiers.quote(column), "input.key_" + i));
            lookup.add(table.keyEquals(column, "t." + Identifiers.quote(column), "input.key_" + i));
            written.add("fenced_row." + Identifiers.quote(column) + " AS written_key_" + i);
            twice.add(table.keyEquals(column, "applied.written_key_" + i, "input.key_" + i));
        }
        // a batch written under one token (the usual case: one lock holder) binds it once
        String token = oneToken ? "CAST(:" + TOKEN + " AS bigint)" : "input.token";
        if (!oneToken) {
            arrays.add("CAST(:" + BATCH_TOKENS + " AS bigint[])");
            names.add("token");
        }
        List<String> set = new ArrayList<>();
        for (int i = 0; i < columns.size(); i++) {
            String column = columns.get(i);
            arrays.add(typedArray(batchValues(i), integralValues[i], table, column));
            names.add("value_" + i);
            set.add(Identifiers.quote(column) + " = input.value_" + i);
        }
        set.add(fence + " = " + token);
        String from =
                "UPDATE " + target(table) + " AS fenced_row SET " + String.join(", ", set) + " FROM " + unnest(arrays);
        String where = " WHERE " + String.join(" AND ", join) + " AND fenced_row." + fence + " "
                + fenceComparison(policy) + " " + token;
        if (keyIndex != null) {
            // The update count is the number of table rows written: PostgreSQL writes a row once however many
            // input rows join it. While a unique index on (a subset of) the key columns holds, an input row
            // joins at most one table row, so a count of the batch's size means every input row wrote
            // exactly one row, a different one each (a key given twice, even in two spellings the client
            // cannot compare, such as '7' and '07' for a number, leaves the count short). The index, found
            // earlier by the full check (KeyIndex.find), is looked up again in the statement itself, once (an
            // InitPlan), by its OID and everything the full check read from it and from the key columns
            // (KeyIndex.stands, a few primary-key probes of the catalog where the full check costs about
            // 0.4 ms): when it no longer stands as found, nothing is written and the reporting statement,
            // which counts input rows, finds what happened. No index can be dropped or replaced while the
            // statement runs, as the UPDATE holds a lock on the table that DROP INDEX waits for.
            // A count short of the size fails the statement, so that on an auto-commit connection it needs
            // no transaction around it: PostgreSQL undoes the statement, and what it wrote never commits.
            // The failure is a cast of text that is not a number, evaluated only then; its text, quoted in
            // the error (and in the server's log), says what happened.
            String size = "CAST(:" + BATCH_SIZE + " AS bigint)";
            return "WITH applied AS (" + from + " AS input(" + String.join(", ", names) + ")" + where
                    + " AND " + keyIndex.stands() + " RETURNING 1)"
                    + " SELECT CAST(CASE WHEN pg_catalog.count(*) " + CatalogSql.EQUALS + " " + size
                    + " THEN '0' ELSE '"
                    + BATCH_SHORTFALL
                    + "' OPERATOR(pg_catalog.||) pg_catalog.count(*) OPERATOR(pg_catalog.||) ' rows for ' OPERATOR(pg_catalog.||) "
                    + size + " OPERATOR(pg_catalog.||) ' keys'"
                    // the index looked up again only in a failure (an InitPlan runs when first needed), so
                    // that the writer looks for it again only when it changed
                    + " OPERATOR(pg_catalog.||) CASE WHEN " + keyIndex.stands() + " THEN '' ELSE '" + KEY_INDEX_CHANGED
                    + "' END"
                    + " OPERATOR(pg_catalog.||) '; rolled back' END AS bigint) AS shortfall FROM applied";
        }
        String update = from + " WITH ORDINALITY AS input(" + String.join(", ", names) + ", ord)" + where;
        // A bad batch fails the statement, so that PostgreSQL undoes what it wrote, in the caller's
        // transaction too: with the text of BATCH_FAILURE, the statement's own nonce (so that no value of
        // the caller's failing the same cast reads as this) and what went wrong.
        String failure = "'" + BATCH_FAILURE + "' OPERATOR(pg_catalog.||) CAST(:" + BATCH_NONCE
                + " AS bigint) OPERATOR(pg_catalog.||) ': ";
        return "WITH applied AS (" + update + " RETURNING input.ord, " + String.join(", ", written) + ")"
                // an input row not written whose key names a row another input row wrote: one key twice,
                // in spellings the client could not compare ('7' and '07' for a number)
                + " SELECT CAST(CASE WHEN EXISTS (SELECT 1 FROM applied WHERE " + String.join(" AND ", twice)
                + ") THEN " + failure
                + "key given twice, input row ' OPERATOR(pg_catalog.||) input.ord ELSE CAST(input.ord AS pg_catalog.text)"
                + " END AS bigint) AS ord,"
                // (a key that matches two rows fails the statement here too: its count is not constant)
                + " (SELECT CASE WHEN pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 THEN CAST(" + failure
                + KEY_NAMES_ROWS
                + " (' OPERATOR(pg_catalog.||) pg_catalog.count(*)"
                + " OPERATOR(pg_catalog.||) ' rows for input row ' OPERATOR(pg_catalog.||) input.ord OPERATOR(pg_catalog.||) ')' AS bigint) ELSE pg_catalog.max(t."
                + fence + ") END FROM "
                + target(table) + " AS t WHERE " + String.join(" AND ", lookup) + ") AS stored"
                + " FROM " + unnest(keyArrays) + " WITH ORDINALITY AS input("
                + String.join(", ", keyNames) + ", ord)"
                // an uncommon case: evaluated once (an InitPlan), it keeps the rest from running at all
                + " WHERE (SELECT pg_catalog.count(*) FROM applied) OPERATOR(pg_catalog.<) :" + BATCH_SIZE
                + " AND NOT EXISTS (SELECT 1 FROM applied WHERE applied.ord " + CatalogSql.EQUALS + " input.ord)"
                // and a failure when some input row wrote more than one table row: its extra rows could make
                // up the count above for a row that was not written
                // (the text holds the counts: a constant would be cast, and fail, when the statement is planned)
                + " UNION ALL SELECT CAST(" + failure + KEY_NAMES_ROWS
                + " (' OPERATOR(pg_catalog.||) (SELECT pg_catalog.count(*) FROM applied)"
                + " OPERATOR(pg_catalog.||) ' rows for ' OPERATOR(pg_catalog.||) (SELECT pg_catalog.count(DISTINCT ord) FROM applied) OPERATOR(pg_catalog.||) ' input rows)' AS bigint), NULL"
                + " WHERE (SELECT pg_catalog.count(*) FROM applied) OPERATOR(pg_catalog.>) (SELECT pg_catalog.count(DISTINCT ord) FROM applied)"
                + " ORDER BY 1";
    }

    /**
     * {@code unnest} of the arrays, never one of the search path's: of one array, {@code pg_catalog.unnest}
     * (a {@code public.unnest(text[])} would be an exact match for a text array, and win); of several, the
     * form PostgreSQL rewrites itself to {@code pg_catalog.unnest} of each (it is recognised only unqualified).
     */
    private static String unnest(List<String> arrays) {
        return (arrays.size() == 1 ? "pg_catalog.unnest(" : "unnest(") + String.join(", ", arrays) + ")";
    }

    /** The table's key column names as an SQL text array. */
    static String keyNames(FencedTable table) {
        List<String> keys = new ArrayList<>();
        for (String column : table.keyColumns()) {
            keys.add("'" + Identifiers.require("key column", column) + "'");
        }
        return "ARRAY[" + String.join(", ", keys) + "]";
    }

    /**
     * The array bound as {@code binding}, cast to an array of the column's type, every type named with its
     * schema ({@link FencedTable#castType}): a {@code text} or a column type's name that the session's search
     * path finds elsewhere first would be another type.
     */
    private static String typedArray(String binding, boolean integral, FencedTable table, String column) {
        String bound = "CAST(:" + binding + (integral ? " AS bigint[])" : " AS pg_catalog.text[])");
        return "bigint".equals(table.columnType(column).orElseThrow()) && integral
                ? bound
                : "CAST(" + bound + " AS " + table.castType(column).orElseThrow() + "[])";
    }

    /** The comparison between the stored token (left) and the offered token (right) under {@code policy}. */
    public static String operator(FencePolicy policy) {
        return policy == FencePolicy.STRICT ? "<" : "<=";
    }

    /**
     * {@link #operator} as the statements write it: PostgreSQL's own, named with its schema. An operator is
     * looked up on the search path, and an exact match there (say a {@code <} on bigint in a schema placed
     * before pg_catalog) would be taken for the built-in one; written as {@code OPERATOR(pg_catalog.<)} it
     * is the built-in one on any search path.
     */
    public static String fenceComparison(FencePolicy policy) {
        return "OPERATOR(pg_catalog." + operator(policy) + ")";
    }
}
