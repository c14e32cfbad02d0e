package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.FencedTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jdbi.v3.core.Handle;

/**
 * The unique index that makes a table's key columns name at most one row, as the full check of {@link
 * CatalogSql#uniqueKey} found it: its OID and everything that check read from its {@code pg_index} row and
 * from the key columns' {@code pg_attribute} rows. {@link #stands()} asks the catalog whether all of it is
 * still so, by primary key: a few probes, where the full check joins half the catalog (about 0.4 ms a
 * statement, a tenth of a 1,000-row batch). An index is immutable in what the check read (its columns,
 * operator classes, collations, predicate and expressions), and altering a key column's type or collation
 * rebuilds it under a new OID; all of it is compared anyway, so the conclusion does not rest on that.
 *
 * <p>Compared by content, with its hash computed once: it is part of the key of the statements that rely
 * on it, and an index found again as it was finds their statements again.
 */
final class KeyIndex {
    private final FencedTable table;
    /** The index. */
    private final long indexOid;
    /** Its {@code indkey} ({@code int2vector} text: the table's column numbers, included columns too). */
    private final String keyVector;
    /** Its {@code indclass} ({@code oidvector} text: one operator class per key column). */
    private final String classVector;
    /** Its {@code indcollation} ({@code oidvector} text). */
    private final String collationVector;
    /** The table's columns the index is keyed on, each as it was when the index was found. */
    private final List<Column> columns;

    private final int hash;

    /** A key column of the index: number, name, type and collation, as in {@code pg_attribute}. */
    record Column(int number, String name, long typeOid, long collationOid) {}

    KeyIndex(
            FencedTable table,
            long indexOid,
            String keyVector,
            String classVector,
            String collationVector,
            List<Column> columns) {
        this.table = table;
        this.indexOid = indexOid;
        this.keyVector = requireVector(keyVector);
        this.classVector = requireVector(classVector);
        this.collationVector = requireVector(collationVector);
        this.columns = List.copyOf(columns);
        this.hash = Objects.hash(
                System.identityHashCode(table), indexOid, keyVector, classVector, collationVector, this.columns);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof KeyIndex that
                && hash == that.hash
                && table == that.table
                && indexOid == that.indexOid
                && keyVector.equals(that.keyVector)
                && classVector.equals(that.classVector)
                && collationVector.equals(that.collationVector)
                && columns.equals(that.columns);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public String toString() {
        return "unique index " + indexOid + " of " + table.qualifiedName() + " on " + columns;
    }

    /**
     * The table's unique index on (a subset of) its key columns that passes the full check, the primary
     * key first; empty when there is none, or when one of its columns no longer has the type the table had
     * when it was built (the statements cast to that type; build the table again). Reads the catalog on
     * {@code handle}; what it finds is only trusted through {@link #stands()}, inside the statement that
     * relies on it.
     */
    static Optional<KeyIndex> find(Handle handle, FencedTable table) {
        String relation = "CAST('" + table.quotedName() + "' AS pg_catalog.regclass)";
        List<Object[]> rows = StatementParser.query(
                        handle,
                        "SELECT i.indexrelid, CAST(i.indkey AS pg_catalog.text) AS key_vector,"
                                + " CAST(i.indclass AS pg_catalog.text) AS class_vector,"
                                + " CAST(i.indcollation AS pg_catalog.text) AS collation_vector,"
                                + " a.attnum, CAST(a.attname AS pg_catalog.text) AS attname, a.atttypid, a.attcollation,"
                                + " pg_catalog.format_type(a.atttypid, -1) AS type_name,"
                                + " " + CatalogSql.equalityOf("k.opclass") + " AS equality"
                                + " FROM pg_catalog.pg_index AS i"
                                // unnest of several arrays: PostgreSQL makes it pg_catalog.unnest of each
                                + " CROSS JOIN LATERAL unnest(CAST(i.indkey AS pg_catalog.int2[]), CAST(i.indclass AS pg_catalog.oid[]))"
                                + " WITH ORDINALITY AS k(attnum, opclass, n)"
                                + " JOIN pg_catalog.pg_attribute AS a ON a.attrelid " + CatalogSql.EQUALS
                                + " i.indrelid"
                                + " AND a.attnum " + CatalogSql.EQUALS + " k.attnum"
                                + " WHERE k.n " + CatalogSql.AT_MOST + " i.indnkeyatts"
                                + " AND i.indexrelid " + CatalogSql.EQUALS + " (SELECT i.indexrelid"
                                + " FROM pg_catalog.pg_index AS i WHERE "
                                + CatalogSql.uniqueIndex(relation, FencedSql.keyNames(table))
                                + " ORDER BY i.indisprimary DESC, i.indexrelid LIMIT 1) ORDER BY k.n")
                .map((rs, ctx) -> new Object[] {
                    rs.getLong("indexrelid"),
                    rs.getString("key_vector"),
                    rs.getString("class_vector"),
                    rs.getString("collation_vector"),
                    rs.getInt("attnum"),
                    rs.getString("attname"),
                    rs.getLong("atttypid"),
                    rs.getLong("attcollation"),
                    rs.getString("type_name"),
                    rs.getString("equality")
                })
                .list();
        if (rows.isEmpty()) {
            return Optional.empty();
        }
        List<Column> columns = new ArrayList<>();
        for (Object[] row : rows) {
            String name = (String) row[5];
            if (!table.keyColumns().contains(name)) {
                // the full check admits only key columns; anything else is not this index
                throw new IllegalStateException(
                        "unique index " + row[0] + " of " + table.qualifiedName() + " is keyed on " + name);
            }
            if (!row[8].equals(table.columnType(name).orElse(null))) {
                // altered since the table was built: the statements still cast to the old type, whose
                // equality need not be the index's
                return Optional.empty();
            }
            if (!table.keyEquality(name).equals(row[9])) {
                // the type's default class changed since the table was checked (the statements compare with
                // the equality of the one it had), and this index is under the new one: not relied on
                return Optional.empty();
            }
            columns.add(new Column((Integer) row[4], name, (Long) row[6], (Long) row[7]));
        }
        Object[] first = rows.get(0);
        return Optional.of(
                new KeyIndex(table, (Long) first[0], (String) first[1], (String) first[2], (String) first[3], columns));
    }

    /**
     * An SQL boolean, evaluated once per statement (an InitPlan): the index still stands as found, on the
     * table the statement names, over the same columns, which still have the names, types and collations
     * they had, under the same operator classes. Whether each class is still its type's default does not
     * matter: the statements compare with the equality the table was checked with ({@link
     * FencedTable#keyEquality}), which {@link #find} found to be this index's classes' equality. Every
     * comparison is pg_catalog's, named with its schema ({@link CatalogSql#EQUALS}): the statement runs on the
     * writer's session, whatever its search path.
     */
    String stands() {
        String equals = " " + CatalogSql.EQUALS + " ";
        StringBuilder sql = new StringBuilder("(SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i")
                .append(" WHERE i.indexrelid")
                .append(equals)
                .append(oid(indexOid))
                .append(" AND i.indrelid")
                .append(equals)
                .append("CAST('")
                .append(table.quotedName())
                .append("' AS pg_catalog.regclass)")
                .append(" AND i.indisunique AND i.indimmediate AND i.indisvalid")
                .append(" AND i.indpred IS NULL AND i.indexprs IS NULL")
                .append(" AND i.indkey")
                .append(equals)
                .append("CAST('")
                .append(keyVector)
                .append("' AS pg_catalog.int2vector) AND i.indclass")
                .append(equals)
                .append("CAST('")
                .append(classVector)
                .append("' AS pg_catalog.oidvector) AND i.indcollation")
                .append(equals)
                .append("CAST('")
                .append(collationVector)
                .append("' AS pg_catalog.oidvector)");
        for (Column column : columns) {
            sql.append(" AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a WHERE a.attrelid")
                    .append(equals)
                    .append("i.indrelid AND a.attnum")
                    .append(equals)
                    .append("CAST(")
                    .append(column.number())
                    .append(" AS pg_catalog.int2) AND a.attname")
                    .append(equals)
                    .append("CAST('")
                    .append(Identifiers.require("key column", column.name()))
                    .append("' AS pg_catalog.name) AND a.atttypid")
                    .append(equals)
                    .append(oid(column.typeOid()))
                    .append(" AND a.attcollation")
                    .append(equals)
                    .append(oid(column.collationOid()))
                    .append(")");
        }
        return sql.append("))").toString();
    }

    private static String oid(long oid) {
        return "CAST(" + oid + " AS pg_catalog.oid)";
    }

    /** Vector text goes into SQL literals: digits and spaces only. */
    private static String requireVector(String vector) {
        if (vector == null || !vector.matches("[0-9 ]*")) {
            throw new IllegalStateException("unexpected catalog vector: " + vector);
        }
        return vector;
    }
}
