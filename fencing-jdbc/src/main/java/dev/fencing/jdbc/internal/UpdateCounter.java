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
 * by exactly the rows that {@code UPDATE} wrote when nothing else the statement sets off updates the table:
 *
 * <ul>
 *   <li>the table is a plain one ({@code relkind 'r'}: a partitioned table's rows are counted in its
 *       partitions) without rules (a rule can add statements to the {@code UPDATE} or replace it) and
 *       without row-level security (a policy's expression may call a function that writes);
 *   <li>no trigger that fires on {@code UPDATE} is enabled but the toolkit's guard ({@code
 *       fencing.guard_fence_token}, which only raises) and PostgreSQL's foreign-key checks ({@code
 *       RI_FKey_check_upd}, {@code RI_FKey_noaction_upd}, {@code RI_FKey_restrict_upd}, which only read and
 *       lock). A trigger of the user's could update other rows of the table (a cascade of a self-referencing
 *       key could too), and those would make up the count for a row the batch did not write;
 *   <li>no {@code CHECK} constraint of the table, and none of a domain a column's type is or is built on,
 *       calls a volatile function of the user's (one that is not, cannot write: PostgreSQL runs stable and
 *       immutable functions read-only, and records no dependency on its own functions, none of which
 *       writes a table).
 * </ul>
 *
 * <p>The count is the session's own and only grows within a transaction (PostgreSQL moves it to the shared
 * statistics only between transactions, and keeps a rolled-back subtransaction's updates in it). Anything that
 * stops it growing ({@code track_counts} off) leaves the count short, which fails the statement and sends the
 * batch to the reporting statement: slower, never wrong. {@link #find} reads what holds now on the client;
 * {@link #holds()} confirms it in the statement that relies on it, after the {@code UPDATE}, under the lock
 * the {@code UPDATE} took (which a new trigger, rule, policy, constraint or change of kind waits for); all but
 * the domains, which {@link #find} alone checks (a domain's constraint is changed without that lock; looked
 * up in every statement, the types under every column would cost more than the count saves).
 *
 * <p>Compared by content: it is part of the key of the statements that rely on it.
 */
record UpdateCounter(FencedTable table, List<Long> allowedTriggerFunctions) {
    /** The name of the setting that carries the count from before the {@code UPDATE} to the check after it. */
    static final String BEFORE = "fencing.batch_updates_before";

    UpdateCounter {
        allowedTriggerFunctions = List.copyOf(allowedTriggerFunctions);
    }

    /**
     * The counter of {@code table} when its updates can be counted as described above, now; empty otherwise
     * (a trigger of the user's, a rule, a partitioned table: the batch then counts with {@code RETURNING}).
     */
    static Optional<UpdateCounter> find(Handle handle, FencedTable table) {
        List<Long> allowed = StatementParser.query(
                        handle,
                        "SELECT p.oid FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n"
                                + " ON n.oid OPERATOR(pg_catalog.=) p.pronamespace"
                                + " WHERE (n.nspname OPERATOR(pg_catalog.=) 'pg_catalog' AND p.proname"
                                + " OPERATOR(pg_catalog.=) ANY (CAST('{RI_FKey_check_upd,RI_FKey_noaction_upd,"
                                + "RI_FKey_restrict_upd}' AS pg_catalog.name[])))"
                                + " OR (n.nspname OPERATOR(pg_catalog.=) 'fencing' AND p.proname"
                                + " OPERATOR(pg_catalog.=) 'guard_fence_token' AND p.pronargs OPERATOR(pg_catalog.=) 0)"
                                + " ORDER BY p.oid")
                .map((rs, ctx) -> rs.getLong(1))
                .list();
        UpdateCounter counter = new UpdateCounter(table, allowed);
        boolean holds = StatementParser.query(
                        handle,
                        "WITH RECURSIVE types(oid) AS (SELECT a.atttypid FROM pg_catalog.pg_attribute AS a"
                                + " WHERE a.attrelid OPERATOR(pg_catalog.=) " + counter.relation()
                                + " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped"
                                + " UNION SELECT under.oid FROM pg_catalog.pg_type AS t JOIN types"
                                + " ON t.oid OPERATOR(pg_catalog.=) types.oid CROSS JOIN LATERAL (VALUES"
                                + " (t.typbasetype), (t.typelem)) AS under(oid) WHERE under.oid"
                                + " OPERATOR(pg_catalog.<>) 0)"
                                + " SELECT " + counter.holds() + " AND NOT EXISTS (SELECT 1 FROM types JOIN"
                                + " pg_catalog.pg_constraint AS con ON con.contypid OPERATOR(pg_catalog.=) types.oid"
                                + " WHERE " + callsVolatile("con.oid") + ")")
                .map((rs, ctx) -> rs.getBoolean(1))
                .one();
        return holds ? Optional.of(counter) : Optional.empty();
    }

    /** An SQL expression: the session's count of the table's updated rows in this transaction so far. */
    String updated() {
        return "pg_catalog.pg_stat_get_xact_tuples_updated(" + relation() + ")";
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

    /** An SQL boolean: the table's updates can still be counted as {@link #find} found (but the domains). */
    String holds() {
        String functions = allowedTriggerFunctions.stream().map(String::valueOf).collect(Collectors.joining(","));
        return "(EXISTS (SELECT 1 FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) " + relation()
                + " AND c.relkind OPERATOR(pg_catalog.=) 'r' AND NOT c.relhasrules AND NOT c.relrowsecurity)"
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS con"
                + " WHERE con.conrelid OPERATOR(pg_catalog.=) " + relation() + " AND " + callsVolatile("con.oid") + ")"
                + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS g WHERE g.tgrelid OPERATOR(pg_catalog.=) "
                + relation() + " AND g.tgenabled OPERATOR(pg_catalog.<>) 'D'"
                // TRIGGER_TYPE_UPDATE
                + " AND (CAST(g.tgtype AS integer) OPERATOR(pg_catalog.&) 16) OPERATOR(pg_catalog.<>) 0"
                + " AND g.tgfoid OPERATOR(pg_catalog.<>) ALL (CAST('{" + functions + "}' AS pg_catalog.oid[]))))";
    }

    /**
     * An SQL boolean: the constraint {@code constraint} (an SQL oid) depends on a volatile function, which
     * PostgreSQL records for functions of the user's (2606 is {@code pg_constraint}'s OID, 1255 {@code
     * pg_proc}'s, as in every PostgreSQL).
     */
    private static String callsVolatile(String constraint) {
        return "EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d JOIN pg_catalog.pg_proc AS p"
                + " ON p.oid OPERATOR(pg_catalog.=) d.refobjid WHERE d.classid OPERATOR(pg_catalog.=)"
                + " CAST(2606 AS pg_catalog.oid) AND d.objid OPERATOR(pg_catalog.=) " + constraint
                + " AND d.refclassid OPERATOR(pg_catalog.=) CAST(1255 AS pg_catalog.oid)"
                + " AND p.provolatile OPERATOR(pg_catalog.=) 'v')";
    }

    private String relation() {
        return "CAST('" + table.quotedName() + "' AS pg_catalog.regclass)";
    }
}
