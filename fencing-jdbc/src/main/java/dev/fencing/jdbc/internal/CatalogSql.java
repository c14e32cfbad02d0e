package dev.fencing.jdbc.internal;

/**
 * Catalog queries: what {@link dev.fencing.jdbc.FencedTable} checks of a table before it writes (a unique key
 * that compares as the statements do, each key column's equality) and what {@link KeyIndex} reads of the
 * index it found. Text only, from SQL expressions the caller gives: nothing here knows a table.
 */
public final class CatalogSql {
    private CatalogSql() {}

    /**
     * PostgreSQL's own {@code =}, named with its schema: for counts and positions, key columns without a class,
     * and every comparison of the catalog queries here. Unqualified, an operator is the search path's: a session
     * whose path puts a schema before pg_catalog, with an {@code =} on names that ignores case there, would read
     * a primary key on "LOT" as one on {@code lot}; one with an {@code =} on oid that holds for any two would
     * find a dropped index still standing. Every function and catalog table is named with its schema too.
     */
    public static final String EQUALS = "OPERATOR(pg_catalog.=)";

    /** PostgreSQL's own {@code <>}, named with its schema (see {@link #EQUALS}). */
    static final String NOT_EQUALS = "OPERATOR(pg_catalog.<>)";

    /** PostgreSQL's own {@code <=}, named with its schema (see {@link #EQUALS}). */
    static final String AT_MOST = "OPERATOR(pg_catalog.<=)";

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

    /**
     * An SQL boolean: whether one of the unique indexes {@link #uniqueKey} accepts is on exactly the key
     * columns (every one of them among its key columns), as an upsert's {@code ON CONFLICT} on all key
     * columns needs: PostgreSQL infers the arbiter only from an index whose columns are the conflict target's.
     */
    public static String exactUniqueKey(String relation, String keyColumns) {
        return "EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE " + uniqueIndex(relation, keyColumns)
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(CAST(" + keyColumns + " AS pg_catalog.name[]))"
                + " AS key(name) WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a"
                + " JOIN pg_catalog.unnest(CAST(i.indkey AS pg_catalog.int2[])) WITH ORDINALITY AS k(attnum, n)"
                + " ON k.attnum " + EQUALS + " a.attnum AND k.n " + AT_MOST + " i.indnkeyatts"
                + " WHERE a.attrelid " + EQUALS + " i.indrelid AND a.attname " + EQUALS + " key.name)))";
    }

    /** The base type of the type {@code t} (a row of {@code pg_catalog.pg_type}): its domain's, or itself. */
    private static final String BASE_TYPE =
            "(CASE WHEN t.typtype " + EQUALS + " 'd' THEN t.typbasetype ELSE t.oid END)";

    private static final String BTREE =
            "(SELECT am.oid FROM pg_catalog.pg_am AS am WHERE am.amname " + EQUALS + " 'btree')";

    /** The condition of {@link #uniqueKey} on one index, {@code i} (a row of {@code pg_catalog.pg_index}). */
    static String uniqueIndex(String relation, String keyColumns) {
        return "i.indrelid " + EQUALS + " " + relation
                + " AND i.indisunique AND i.indimmediate AND i.indisvalid"
                + " AND i.indpred IS NULL AND i.indexprs IS NULL"
                // unnest of several arrays: PostgreSQL makes it pg_catalog.unnest of each
                + " AND NOT EXISTS (SELECT 1 FROM unnest(CAST(i.indkey AS pg_catalog.int2[]),"
                + " CAST(i.indclass AS pg_catalog.oid[]), CAST(i.indcollation AS pg_catalog.oid[]))"
                + " WITH ORDINALITY AS k(attnum, opclass, collation_oid, n)"
                + " WHERE k.n " + AT_MOST + " i.indnkeyatts AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a"
                + " JOIN pg_catalog.pg_type AS t ON t.oid " + EQUALS + " a.atttypid"
                + " WHERE a.attrelid " + EQUALS + " i.indrelid AND a.attnum " + EQUALS + " k.attnum"
                + " AND a.attname " + EQUALS + " ANY (CAST(" + keyColumns + " AS pg_catalog.name[]))"
                + " AND k.collation_oid " + EQUALS + " a.attcollation"
                + " AND k.opclass " + EQUALS + " " + DEFAULT_CLASS + "))";
    }

    /**
     * The condition that {@code c} (a row of {@code pg_catalog.pg_opclass}) is the btree operator class
     * PostgreSQL picks by default for the type {@code t} (a row of {@code pg_catalog.pg_type}): the type's
     * own default class, or else the default class of a type it converts to without a function (varchar's
     * is text's), or the polymorphic class of its kind (an array's, an enum's, a range's).
     */
    static final String DEFAULT_BTREE_CLASS = "c.opcmethod " + EQUALS + " " + BTREE + " AND c.opcdefault"
            + " AND (c.opcintype " + EQUALS + " " + BASE_TYPE
            + " OR (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_opclass AS own WHERE own.opcmethod " + EQUALS + " "
            + BTREE + " AND own.opcdefault AND own.opcintype " + EQUALS + " " + BASE_TYPE + ")"
            + " AND (EXISTS (SELECT 1 FROM pg_catalog.pg_cast AS cast_to WHERE cast_to.castsource " + EQUALS + " "
            + BASE_TYPE + " AND cast_to.casttarget " + EQUALS + " c.opcintype AND cast_to.castmethod " + EQUALS
            + " 'b')"
            // the polymorphic classes PostgreSQL's IsBinaryCoercible admits: anyarray for an array type,
            // anyenum for an enum, anyrange for a range
            + " OR EXISTS (SELECT 1 FROM pg_catalog.pg_type AS poly WHERE poly.oid " + EQUALS + " " + BASE_TYPE
            + " AND ((c.opcintype " + EQUALS + " CAST('pg_catalog.anyarray' AS pg_catalog.regtype)"
            + " AND poly.typcategory " + EQUALS + " 'A')"
            + " OR (c.opcintype " + EQUALS + " CAST('pg_catalog.anyenum' AS pg_catalog.regtype)"
            + " AND poly.typtype " + EQUALS + " 'e')"
            + " OR (c.opcintype " + EQUALS + " CAST('pg_catalog.anyrange' AS pg_catalog.regtype)"
            + " AND poly.typtype " + EQUALS + " 'r'))))))";

    /**
     * The OID of the btree operator class PostgreSQL picks for the type {@code t} (a row of {@code
     * pg_catalog.pg_type}) when an index names none, as its {@code GetDefaultOpClass} does: the type's own
     * default class; else, of the default classes of types it converts to without a function, the one of
     * its category's preferred type, or the only one (varchar converts to text and to character, and text
     * is the preferred string type); NULL when there is none or the choice is ambiguous.
     */
    static final String DEFAULT_CLASS = "(SELECT CASE WHEN pg_catalog.count(*) " + EQUALS
            + " 1 THEN pg_catalog.min(ranked.oid) END FROM (SELECT c.oid,"
            + " pg_catalog.rank() OVER (ORDER BY CASE WHEN c.opcintype " + EQUALS + " " + BASE_TYPE + " THEN 0"
            + " WHEN it.typispreferred AND it.typcategory " + EQUALS + " bt.typcategory THEN 1 ELSE 2 END) AS r"
            + " FROM pg_catalog.pg_opclass AS c JOIN pg_catalog.pg_type AS it ON it.oid " + EQUALS + " c.opcintype"
            + " JOIN pg_catalog.pg_type AS bt ON bt.oid " + EQUALS + " " + BASE_TYPE + " WHERE " + DEFAULT_BTREE_CLASS
            + ") AS ranked WHERE ranked.r " + EQUALS + " 1)";

    /**
     * The equality ({@code =}, strategy 3) of the btree operator class {@code opclass} (an SQL oid
     * expression) on its own type, as the statements write it: {@code OPERATOR(schema.name)}, the schema
     * named, so that the search path cannot put another operator in its place.
     */
    static String equalityOf(String opclass) {
        return "(SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, o.oprname)"
                + " FROM pg_catalog.pg_opclass AS ec"
                + " JOIN pg_catalog.pg_amop AS ao ON ao.amopfamily " + EQUALS + " ec.opcfamily"
                + " AND ao.amopmethod " + EQUALS + " ec.opcmethod AND ao.amopstrategy " + EQUALS + " 3"
                + " AND ao.amoplefttype " + EQUALS + " ec.opcintype AND ao.amoprighttype " + EQUALS + " ec.opcintype"
                + " JOIN pg_catalog.pg_operator AS o ON o.oid " + EQUALS + " ao.amopopr"
                + " JOIN pg_catalog.pg_namespace AS n ON n.oid " + EQUALS + " o.oprnamespace"
                + " WHERE ec.oid " + EQUALS + " " + opclass + ")";
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
        return "SELECT CAST(a.attname AS pg_catalog.text) AS column_name, " + equalityOf("dc.oid") + " AS equality,"
                + " (SELECT pg_catalog.format('%I.%I', n.nspname, ct.typname) FROM pg_catalog.pg_opclass AS cc"
                + " JOIN pg_catalog.pg_type AS ct ON ct.oid " + EQUALS + " cc.opcintype"
                + " JOIN pg_catalog.pg_namespace AS n ON n.oid " + EQUALS + " ct.typnamespace"
                + " WHERE cc.oid " + EQUALS + " dc.oid AND cc.opcintype " + NOT_EQUALS + " a.atttypid"
                + " AND ct.typtype " + NOT_EQUALS + " 'p') AS comparison_type,"
                // what an upsert's ON CONFLICT names for the column: its collation and that class, so that only
                // an index that compares as the statements do decides a conflict
                + " (SELECT CASE WHEN a.attcollation " + NOT_EQUALS + " CAST(0 AS pg_catalog.oid)"
                + " THEN (SELECT pg_catalog.format(' COLLATE %I.%I', cn.nspname, co.collname)"
                + " FROM pg_catalog.pg_collation AS co JOIN pg_catalog.pg_namespace AS cn"
                + " ON cn.oid " + EQUALS + " co.collnamespace WHERE co.oid " + EQUALS + " a.attcollation) ELSE '' END"
                + " OPERATOR(pg_catalog.||) COALESCE((SELECT pg_catalog.format(' %I.%I', pn.nspname, pc.opcname)"
                + " FROM pg_catalog.pg_opclass AS pc JOIN pg_catalog.pg_namespace AS pn"
                + " ON pn.oid " + EQUALS + " pc.opcnamespace WHERE pc.oid " + EQUALS + " dc.oid), ''))"
                + " AS arbiter"
                + " FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_type AS t ON t.oid " + EQUALS + " a.atttypid"
                + " CROSS JOIN LATERAL (SELECT " + DEFAULT_CLASS + " AS oid) AS dc"
                + " WHERE a.attrelid " + EQUALS + " " + relation + " AND a.attname " + EQUALS + " ANY (CAST("
                + keyColumns + " AS pg_catalog.name[]))"
                + " AND NOT a.attisdropped";
    }
}
