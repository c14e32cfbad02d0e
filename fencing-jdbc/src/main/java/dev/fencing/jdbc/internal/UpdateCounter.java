package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.FencedTable;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Handle;

/**
 * What lets the bare batch statement count the rows it wrote without {@code RETURNING}: PostgreSQL's count of
 * the table's rows updated in the current transaction by this session ({@code
 * pg_stat_get_xact_tuples_updated}), read before and after the {@code UPDATE} in the same transaction, grows
 * by exactly the rows that {@code UPDATE} wrote when nothing the statement sets off can run code of the
 * user's, which could update the table too and make up the count for a row the batch did not write:
 *
 * <ul>
 *   <li>the table is a plain one ({@code relkind 'r'}: a partitioned table's rows are counted in its
 *       partitions) without rules (a rule can add statements to the {@code UPDATE} or replace it) and
 *       without row-level security (a policy's expression may call a function of the user's);
 *   <li>no trigger that fires on {@code UPDATE} is enabled but the toolkit's guard ({@code
 *       fencing.guard_fence_token}, which only raises) and PostgreSQL's foreign-key checks ({@code
 *       RI_FKey_check_upd}, {@code RI_FKey_noaction_upd}, {@code RI_FKey_restrict_upd}, which only read and
 *       lock): any other could update other rows of the table (a cascade of a self-referencing key too);
 *   <li>no constraint, index or generated column of the table, and no constraint of a domain a column's type
 *       is or is built on, depends on a function, operator or cast that is not PostgreSQL's own (PostgreSQL
 *       records no dependency on its own objects, none of which writes a table; one of the user's may, even
 *       one declared immutable that calls another, or an operator's).
 * </ul>
 *
 * <p>The count is the session's own and only grows within a transaction (PostgreSQL moves it to the shared
 * statistics only between transactions, and keeps a rolled-back subtransaction's updates in it). Anything that
 * stops it growing ({@code track_counts} off) leaves the count short, which fails the statement and sends the
 * batch to the reporting statement: slower, never wrong. {@link #find} reads what holds now, with the table's
 * column types and the domains under them; {@link #holds()} confirms all of it in the statement that relies on
 * it, after the {@code UPDATE}, under the lock the {@code UPDATE} took (which a new trigger, rule, policy,
 * constraint, index, column or change of kind waits for; a domain's new constraint does not, and is found by
 * the same statement).
 *
 * <p>Compared by content: it is part of the key of the statements that rely on it.
 */
record UpdateCounter(
        FencedTable table, List<Long> allowedTriggerFunctions, List<Long> columnTypes, List<Long> domains) {
    /** The name of the setting that carries the count from before the {@code UPDATE} to the check after it. */
    static final String BEFORE = "fencing.batch_updates_before";

    /** {@code pg_proc}, {@code pg_operator} and {@code pg_cast}'s OIDs, as in every PostgreSQL. */
    private static final String CODE_CATALOGS = "CAST('{1255,2617,2605}' AS pg_catalog.oid[])";

    UpdateCounter {
        allowedTriggerFunctions = List.copyOf(allowedTriggerFunctions);
        columnTypes = List.copyOf(columnTypes);
        domains = List.copyOf(domains);
    }

    /**
     * The counter of {@code table} when its updates can be counted as described above, now; empty otherwise
     * (a trigger of the user's, a rule, a partitioned table: the batch then counts with {@code RETURNING}).
     */
    static Optional<UpdateCounter> find(Handle handle, FencedTable table) {
        String relation = relation(table);
        List<Long> allowed = oids(
                handle,
                "SELECT p.oid FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n"
                        + " ON n.oid OPERATOR(pg_catalog.=) p.pronamespace"
                        + " WHERE (n.nspname OPERATOR(pg_catalog.=) 'pg_catalog' AND p.proname"
                        + " OPERATOR(pg_catalog.=) ANY (CAST('{RI_FKey_check_upd,RI_FKey_noaction_upd,"
                        + "RI_FKey_restrict_upd}' AS pg_catalog.name[])))"
                        + " OR (n.nspname OPERATOR(pg_catalog.=) 'fencing' AND p.proname"
                        + " OPERATOR(pg_catalog.=) 'guard_fence_token' AND p.pronargs OPERATOR(pg_catalog.=) 0)"
                        + " ORDER BY p.oid");
        List<Long> columnTypes = oids(
                handle,
                "SELECT DISTINCT a.atttypid FROM pg_catalog.pg_attribute AS a WHERE a.attrelid"
                        + " OPERATOR(pg_catalog.=) " + relation
                        + " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped ORDER BY 1");
        // the domains among the column types and the types they are built on (a domain's base type, an
        // array's element type), all the way down
        List<Long> domains = oids(
                handle,
                "WITH RECURSIVE types(oid) AS (SELECT CAST(o AS pg_catalog.oid) FROM pg_catalog.unnest(CAST('"
                        + array(columnTypes)
                        + "' AS pg_catalog.oid[])) AS o UNION SELECT under.oid FROM pg_catalog.pg_type AS t JOIN types"
                        + " ON t.oid OPERATOR(pg_catalog.=) types.oid CROSS JOIN LATERAL (VALUES (t.typbasetype),"
                        + " (t.typelem)) AS under(oid) WHERE under.oid OPERATOR(pg_catalog.<>) 0)"
                        + " SELECT t.oid FROM pg_catalog.pg_type AS t JOIN types ON t.oid OPERATOR(pg_catalog.=)"
                        + " types.oid WHERE t.typtype OPERATOR(pg_catalog.=) 'd' ORDER BY 1");
        UpdateCounter counter = new UpdateCounter(table, allowed, columnTypes, domains);
        boolean holds = StatementParser.query(handle, "SELECT " + counter.holds())
                .map((rs, ctx) -> rs.getBoolean(1))
                .one();
        return holds ? Optional.of(counter) : Optional.empty();
    }

    private static List<Long> oids(Handle handle, String sql) {
        return StatementParser.query(handle, sql)
                .map((rs, ctx) -> rs.getLong(1))
                .list();
    }

    /** An SQL expression: the session's count of the table's updated rows in this transaction so far. */
    String updated() {
        return "pg_catalog.pg_stat_get_xact_tuples_updated(" + relation(table) + ")";
    }

    /** An SQL statement: keeps {@link #updated()} for {@link #since()}, in this transaction only. */
    String keepBefore() {
        return "SELECT pg_catalog.set_config('" + BEFORE + "', CAST(" + updated() + " AS pg_catalog.text), true)";
    }

    /** An SQL bigint: the table's rows updated since {@link #keepBefore()} ran in this transaction. */
    String since() {
        return "(" + updated() + " OPERATOR(pg_catalog.-) CAST(pg_catalog.current_setting('" + BEFORE
                + "') AS bigint))";
    }

    /** An SQL boolean: the table's updates can still be counted as {@link #find} found. */
    String holds() {
        String relation = relation(table);
        return "(EXISTS (SELECT 1 FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) " + relation
                + " AND c.relkind OPERATOR(pg_catalog.=) 'r' AND NOT c.relhasrules AND NOT c.relrowsecurity)"
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS g WHERE g.tgrelid OPERATOR(pg_catalog.=) "
                + relation + " AND g.tgenabled OPERATOR(pg_catalog.<>) 'D'"
                // TRIGGER_TYPE_UPDATE
                + " AND (CAST(g.tgtype AS integer) OPERATOR(pg_catalog.&) 16) OPERATOR(pg_catalog.<>) 0"
                + " AND g.tgfoid OPERATOR(pg_catalog.<>) ALL (CAST('" + array(allowedTriggerFunctions)
                + "' AS pg_catalog.oid[])))"
                // what the UPDATE evaluates: constraints (CHECK, exclusion), indexes (expressions, predicates),
                // generated columns; 2606 is pg_constraint's OID, 1259 pg_class's, 2604 pg_attrdef's
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS con WHERE con.conrelid"
                + " OPERATOR(pg_catalog.=) " + relation + " AND " + reachesCode("2606", "con.oid") + ")"
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid OPERATOR(pg_catalog.=) "
                + relation + " AND " + reachesCode("1259", "i.indexrelid") + ")"
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef AS ad JOIN pg_catalog.pg_attribute AS g"
                + " ON g.attrelid OPERATOR(pg_catalog.=) ad.adrelid AND g.attnum OPERATOR(pg_catalog.=) ad.adnum"
                + " WHERE ad.adrelid OPERATOR(pg_catalog.=) " + relation
                + " AND g.attgenerated OPERATOR(pg_catalog.<>) '' AND " + reachesCode("2604", "ad.oid") + ")"
                // the column types as found (a new column, or a column's new type, may bring a domain)
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a WHERE a.attrelid OPERATOR(pg_catalog.=) "
                + relation + " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped"
                + " AND a.atttypid OPERATOR(pg_catalog.<>) ALL (CAST('" + array(columnTypes)
                + "' AS pg_catalog.oid[])))"
                // and the constraints of the domains under them, which change without a lock on the table
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS con WHERE con.contypid"
                + " OPERATOR(pg_catalog.=) ANY (CAST('" + array(domains) + "' AS pg_catalog.oid[]))"
                + " AND " + reachesCode("2606", "con.oid") + "))";
    }

    /**
     * An SQL boolean: the object {@code objectId} (an SQL oid) of the catalog {@code catalog} (its OID)
     * depends on a function, operator or cast, which PostgreSQL records for the user's own only.
     */
    private static String reachesCode(String catalog, String objectId) {
        return "EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d WHERE d.classid OPERATOR(pg_catalog.=) CAST("
                + catalog + " AS pg_catalog.oid) AND d.objid OPERATOR(pg_catalog.=) " + objectId
                + " AND d.refclassid OPERATOR(pg_catalog.=) ANY (" + CODE_CATALOGS + "))";
    }

    private static String array(List<Long> oids) {
        return "{" + oids.stream().map(String::valueOf).collect(Collectors.joining(",")) + "}";
    }

    private static String relation(FencedTable table) {
        return "CAST('" + table.quotedName() + "' AS pg_catalog.regclass)";
    }
}
