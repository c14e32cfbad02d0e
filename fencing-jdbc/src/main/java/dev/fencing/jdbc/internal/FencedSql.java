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
                    "CAST(:" + keyBinding(i) + " AS " + table.columnType(column).orElseThrow() + ")"));
        }
        return String.join(" AND ", parts);
    }

    private static String report(FencedTable table, String predicate) {
        String fence = Identifiers.quote(table.fenceColumn());
        return "SELECT written.n AS applied, target.stored, target.predicate_holds"
                + " FROM (SELECT pg_catalog.count(*) AS n FROM applied) AS written"
                + " LEFT JOIN LATERAL (SELECT " + fence + " AS stored, "
                + (predicate == null ? "TRUE" : "coalesce((" + predicate + "), FALSE)") + " AS predicate_holds"
                + " FROM " + target(table) + " WHERE " + keyCondition(table, "") + " AND written.n " + EQUALS + " 0)"
                + " AS target ON TRUE";
    }

    /** A fenced UPDATE; {@code setClause} may be empty (a claim sets only the fence column). */
    public static String update(FencedTable table, String setClause, String predicate, FencePolicy policy) {
        return "WITH applied AS (" + bareUpdate(table, setClause, predicate, policy) + " RETURNING 1) "
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
        return "WITH applied AS (" + bareUpsert(table, columns, policy, extraSet) + " RETURNING 1) "
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
                    "CAST(:" + keyBinding(i) + " AS " + table.columnType(column).orElseThrow() + ")");
        }
        List<String> updates = new ArrayList<>();
        for (int i = 0; i < columns.size(); i++) {
            String column = columns.get(i);
            insertColumns.add(Identifiers.quote(column));
            insertValues.add("CAST(:" + valueBinding(i) + " AS "
                    + table.columnType(column).orElseThrow() + ")");
            updates.add(Identifiers.quote(column) + " = EXCLUDED." + Identifiers.quote(column));
        }
        insertColumns.add(fence);
        insertValues.add(":" + TOKEN);
        updates.add(fence + " = EXCLUDED." + fence);
        if (extraSet != null) {
            updates.add(extraSet);
        }
        return "INSERT INTO " + table.quotedName() + " AS fenced_row ("
                + String.join(", ", insertColumns) + ") VALUES (" + String.join(", ", insertValues) + ")"
                + " ON CONFLICT (" + String.join(", ", arbiters) + ") DO UPDATE SET " + String.join(", ", updates)
                + " WHERE fenced_row." + fence + " " + fenceComparison(policy) + " EXCLUDED." + fence;
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
            String array = typedArray(
                    batchKeys(i), integralKeys[i], table.columnType(column).orElseThrow());
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
            arrays.add(typedArray(
                    batchValues(i), integralValues[i], table.columnType(column).orElseThrow()));
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
                    + " SELECT CAST(CASE WHEN pg_catalog.count(*) " + EQUALS + " " + size + " THEN '0' ELSE '"
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
                + " AND NOT EXISTS (SELECT 1 FROM applied WHERE applied.ord " + EQUALS + " input.ord)"
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
     * An SQL boolean: whether the table {@code relation} (an SQL regclass expression) has a unique index that
     * makes its key columns (the SQL text array {@code keyColumns}) name at most one row as the library's
     * statements compare them, {@code column = CAST(value AS column's type)}. That index is immediate (a
     * deferrable one admits duplicates until COMMIT), valid, whole (no predicate, no expressions), its key
     * columns are all among {@code keyColumns}, and each compares as the column's {@code =} does: with the
     * column's collation (an index {@code COLLATE "C"} on a case-insensitive column tells 'Bob' from 'bob',
     * the column's {@code =} does not) and the default btree operator class of the column's type (a citext
     * column under {@code text_ops} likewise). Anything else counts as no unique key.
     */
    public static String uniqueKey(String relation, String keyColumns) {
        return "EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE " + uniqueIndex(relation, keyColumns) + ")";
    }

    /** The base type of the type {@code t} (a row of {@code pg_catalog.pg_type}): its domain's, or itself. */
    private static final String BASE_TYPE = "(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END)";

    private static final String BTREE = "(SELECT am.oid FROM pg_catalog.pg_am AS am WHERE am.amname = 'btree')";

    /** The condition of {@link #uniqueKey} on one index, {@code i} (a row of {@code pg_catalog.pg_index}). */
    static String uniqueIndex(String relation, String keyColumns) {
        return "i.indrelid = " + relation
                + " AND i.indisunique AND i.indimmediate AND i.indisvalid"
                + " AND i.indpred IS NULL AND i.indexprs IS NULL"
                + " AND NOT EXISTS (SELECT 1 FROM unnest(CAST(i.indkey AS int2[]), CAST(i.indclass AS oid[]),"
                + " CAST(i.indcollation AS oid[])) WITH ORDINALITY AS k(attnum, opclass, collation_oid, n)"
                + " WHERE k.n <= i.indnkeyatts AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a"
                + " JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid"
                + " WHERE a.attrelid = i.indrelid AND a.attnum = k.attnum"
                + " AND a.attname = ANY (CAST(" + keyColumns + " AS name[]))"
                + " AND k.collation_oid = a.attcollation"
                + " AND k.opclass = " + DEFAULT_CLASS + "))";
    }

    /**
     * The condition that {@code c} (a row of {@code pg_catalog.pg_opclass}) is the btree operator class
     * PostgreSQL picks by default for the type {@code t} (a row of {@code pg_catalog.pg_type}): the type's
     * own default class, or else the default class of a type it converts to without a function (varchar's
     * is text's), or the polymorphic class of its kind (an array's, an enum's, a range's).
     */
    static final String DEFAULT_BTREE_CLASS = "c.opcmethod = " + BTREE + " AND c.opcdefault AND (c.opcintype = "
            + BASE_TYPE + " OR (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_opclass AS own WHERE own.opcmethod = "
            + BTREE + " AND own.opcdefault AND own.opcintype = " + BASE_TYPE + ")"
            + " AND (EXISTS (SELECT 1 FROM pg_catalog.pg_cast AS cast_to WHERE cast_to.castsource = " + BASE_TYPE
            + " AND cast_to.casttarget = c.opcintype AND cast_to.castmethod = 'b')"
            // the polymorphic classes PostgreSQL's IsBinaryCoercible admits: anyarray for an array type,
            // anyenum for an enum, anyrange for a range
            + " OR EXISTS (SELECT 1 FROM pg_catalog.pg_type AS poly WHERE poly.oid = " + BASE_TYPE
            + " AND ((c.opcintype = CAST('pg_catalog.anyarray' AS pg_catalog.regtype) AND poly.typcategory = 'A')"
            + " OR (c.opcintype = CAST('pg_catalog.anyenum' AS pg_catalog.regtype) AND poly.typtype = 'e')"
            + " OR (c.opcintype = CAST('pg_catalog.anyrange' AS pg_catalog.regtype) AND poly.typtype = 'r'))))))";

    /**
     * The OID of the btree operator class PostgreSQL picks for the type {@code t} (a row of {@code
     * pg_catalog.pg_type}) when an index names none, as its {@code GetDefaultOpClass} does: the type's own
     * default class; else, of the default classes of types it converts to without a function, the one of
     * its category's preferred type, or the only one (varchar converts to text and to character, and text
     * is the preferred string type); NULL when there is none or the choice is ambiguous.
     */
    static final String DEFAULT_CLASS = "(SELECT CASE WHEN count(*) = 1 THEN min(ranked.oid) END FROM (SELECT c.oid,"
            + " rank() OVER (ORDER BY CASE WHEN c.opcintype = " + BASE_TYPE + " THEN 0"
            + " WHEN it.typispreferred AND it.typcategory = bt.typcategory THEN 1 ELSE 2 END) AS r"
            + " FROM pg_catalog.pg_opclass AS c JOIN pg_catalog.pg_type AS it ON it.oid = c.opcintype"
            + " JOIN pg_catalog.pg_type AS bt ON bt.oid = " + BASE_TYPE + " WHERE " + DEFAULT_BTREE_CLASS
            + ") AS ranked WHERE ranked.r = 1)";

    /**
     * The equality ({@code =}, strategy 3) of the btree operator class {@code opclass} (an SQL oid
     * expression) on its own type, as the statements write it: {@code OPERATOR(schema.name)}, the schema
     * named, so that the search path cannot put another operator in its place.
     */
    static String equalityOf(String opclass) {
        return "(SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, o.oprname)"
                + " FROM pg_catalog.pg_opclass AS ec"
                + " JOIN pg_catalog.pg_amop AS ao ON ao.amopfamily = ec.opcfamily AND ao.amopmethod = ec.opcmethod"
                + " AND ao.amopstrategy = 3 AND ao.amoplefttype = ec.opcintype AND ao.amoprighttype = ec.opcintype"
                + " JOIN pg_catalog.pg_operator AS o ON o.oid = ao.amopopr"
                + " JOIN pg_catalog.pg_namespace AS n ON n.oid = o.oprnamespace WHERE ec.oid = " + opclass + ")";
    }

    /**
     * A query of each key column's comparison: for every column of the table {@code relation} (an SQL regclass
     * expression) named in {@code keyColumns} (an SQL text array), {@code column_name}, {@code equality} (the
     * {@link #equalityOf} the type's {@link #DEFAULT_CLASS}, the class {@link #uniqueIndex} demands of the
     * key's index; NULL when the type has none) and {@code comparison_type} (that class's type, schema-qualified,
     * when it is not the column's own type nor a pseudo-type such as anyarray; else NULL) and {@code arbiter}
     * (its collation and that class, as an upsert's {@code ON CONFLICT} names them). Written unqualified,
     * {@code =} would be whatever the search path finds first: an exact match such as a {@code public.=} on
     * varchar, case-insensitive, wins over pg_catalog's text {@code =} that the index compares with, and a key
     * would name rows the index tells apart.
     */
    public static String keyEqualities(String relation, String keyColumns) {
        return "SELECT CAST(a.attname AS text) AS column_name, " + equalityOf("dc.oid") + " AS equality,"
                + " (SELECT pg_catalog.format('%I.%I', n.nspname, ct.typname) FROM pg_catalog.pg_opclass AS cc"
                + " JOIN pg_catalog.pg_type AS ct ON ct.oid = cc.opcintype"
                + " JOIN pg_catalog.pg_namespace AS n ON n.oid = ct.typnamespace"
                + " WHERE cc.oid = dc.oid AND cc.opcintype <> a.atttypid AND ct.typtype <> 'p') AS comparison_type,"
                // what an upsert's ON CONFLICT names for the column: its collation and that class, so that only
                // an index that compares as the statements do decides a conflict
                + " (SELECT CASE WHEN a.attcollation <> 0 THEN (SELECT pg_catalog.format(' COLLATE %I.%I', cn.nspname,"
                + " co.collname) FROM pg_catalog.pg_collation AS co JOIN pg_catalog.pg_namespace AS cn"
                + " ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation) ELSE '' END"
                + " || COALESCE((SELECT pg_catalog.format(' %I.%I', pn.nspname, pc.opcname) FROM pg_catalog.pg_opclass"
                + " AS pc JOIN pg_catalog.pg_namespace AS pn ON pn.oid = pc.opcnamespace WHERE pc.oid = dc.oid), ''))"
                + " AS arbiter"
                + " FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid"
                + " CROSS JOIN LATERAL (SELECT " + DEFAULT_CLASS + " AS oid) AS dc"
                + " WHERE a.attrelid = " + relation + " AND a.attname = ANY (CAST(" + keyColumns + " AS name[]))"
                + " AND NOT a.attisdropped";
    }

    private static String typedArray(String binding, boolean integral, String type) {
        String bound = "CAST(:" + binding + (integral ? " AS bigint[])" : " AS text[])");
        return "bigint".equals(type) && integral ? bound : "CAST(" + bound + " AS " + type + "[])";
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

    /** PostgreSQL's own {@code =}, named with its schema: for counts and positions, and key columns without a class. */
    public static final String EQUALS = "OPERATOR(pg_catalog.=)";
}
