package dev.fencing.jdbc;

import dev.fencing.jdbc.internal.CatalogSql;
import dev.fencing.jdbc.internal.Identifiers;
import dev.fencing.jdbc.internal.KeyColumnTypes;
import dev.fencing.jdbc.internal.StatementParser;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A protected table, described once: its name, its key columns and its fence column. {@link
 * Builder#build(Jdbi)} checks the description against the database ({@code information_schema} and the
 * catalog): the table and every named column exist, the fence column is {@code BIGINT NOT NULL}, and the
 * key columns form a unique key (primary key or unique index), so that a key names at most one row and
 * {@code ON CONFLICT} can use it. It also records every column's type (values are cast to it) and whether
 * the {@code fencing_guard} trigger of the fencing-db module is installed. It refuses a table in classic
 * inheritance (a parent of inheritance children, or a child): the parent's key does not constrain its
 * children's rows and its row triggers do not fire for them. Partitioned tables and partitions are fine.
 *
 * <pre>{@code
 * // CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
 * // SELECT fencing.protect_table('inventory');   -- adds last_fence_token and the guard trigger
 * FencedTable inventory = FencedTable.builder()
 *         .table("inventory")          // schema "public" unless set
 *         .keyColumns("sku")
 *         .build(jdbi);                // fence column "last_fence_token" unless set
 * }</pre>
 *
 * Identifiers must match {@code [a-z_][a-z0-9_]{0,62}} (names as PostgreSQL stores unquoted ones); they
 * are also double-quoted in every statement. Immutable and thread-safe. A table whose columns change
 * later must be built again.
 */
public final class FencedTable {
    private static final Set<String> FLOATING = Set.of("real", "double precision");

    /** The fence column that {@code fencing.protect_table(...)} adds. */
    public static final String DEFAULT_FENCE_COLUMN = "last_fence_token";

    private static final Logger LOG = LoggerFactory.getLogger(FencedTable.class);

    private final String schema;
    private final String name;
    private final List<String> keyColumns;
    private final String fenceColumn;
    private final Map<String, String> columnTypes;
    /** Each column's type named with its schema, as the statements cast to it: see {@link #castType}. */
    private final Map<String, String> castTypes;

    private final Map<String, KeyComparison> keyComparisons;
    /** The checks of key values against the key columns' types. */
    private final KeyColumnTypes keyTypes;

    private final boolean guarded;
    private final boolean partitioned;
    /** Whether a unique key of the table is on exactly its key columns: an upsert's ON CONFLICT needs one. */
    private final boolean keyedExactly;
    /**
     * Key columns of an {@code interval} type whose fields or precision round (column to its type, {@code interval
     * day}): an upsert's insert would round a key onto another row's, and no check of the writer's reads an
     * interval as PostgreSQL does.
     */
    private final Map<String, String> roundingIntervalKeys;

    private FencedTable(
            String schema,
            String name,
            List<String> keyColumns,
            String fenceColumn,
            Map<String, String> columnTypes,
            Map<String, String> castTypes,
            Map<String, KeyComparison> keyComparisons,
            KeyColumnTypes keyTypes,
            boolean guarded,
            boolean partitioned,
            boolean keyedExactly,
            Map<String, String> roundingIntervalKeys) {
        this.schema = schema;
        this.name = name;
        this.keyColumns = List.copyOf(keyColumns);
        this.fenceColumn = fenceColumn;
        this.columnTypes = Collections.unmodifiableMap(new LinkedHashMap<>(columnTypes));
        this.castTypes = Map.copyOf(castTypes);
        this.keyComparisons = Map.copyOf(keyComparisons);
        this.keyTypes = keyTypes;
        this.guarded = guarded;
        this.partitioned = partitioned;
        this.keyedExactly = keyedExactly;
        this.roundingIntervalKeys = Collections.unmodifiableMap(new LinkedHashMap<>(roundingIntervalKeys));
    }

    public static Builder builder() {
        return new Builder();
    }

    public String schema() {
        return schema;
    }

    public String name() {
        return name;
    }

    /** {@code schema.table}, for messages and metric tags. */
    public String qualifiedName() {
        return schema + "." + name;
    }

    /** {@code "schema"."table"}, for statements. */
    public String quotedName() {
        return Identifiers.quote(schema) + "." + Identifiers.quote(name);
    }

    public List<String> keyColumns() {
        return keyColumns;
    }

    public String fenceColumn() {
        return fenceColumn;
    }

    /** Every column of the table, in table order. */
    public Set<String> columns() {
        return columnTypes.keySet();
    }

    /** The column's base type as PostgreSQL names it (without length or precision), if the column exists. */
    public Optional<String> columnType(String column) {
        return Optional.ofNullable(columnTypes.get(column));
    }

    /**
     * The column's type as the statements cast a value to it: named with its schema ({@code pg_catalog.text},
     * {@code public.citext}; an array as its element type's name with {@code []}), without length or precision,
     * if the column exists. {@link #columnType} names a type without its schema when the search path of the
     * session that checked the table found it, and a session whose search path puts another schema first
     * would read that name as another type: a type named {@code text} there, a domain over {@code varchar(1)},
     * would make {@code CAST('bob' AS text)} read 'b', and the key 'bob' name row 'b'.
     */
    public Optional<String> castType(String column) {
        return Optional.ofNullable(castTypes.get(column));
    }

    /**
     * The {@code =} that the statements compare a key column with, as they write it: {@code
     * OPERATOR(schema.name)}, the equality of the column type's default btree operator class (the one its
     * unique index compares with), found when the table was checked; {@code OPERATOR(pg_catalog.=)} for a
     * key column outside the index whose type has no such class. Named with its schema, so that an {@code =}
     * that the search path finds first (a case-insensitive {@code public.=} on varchar, say) never makes a key
     * name rows that the index tells apart.
     *
     * @throws IllegalArgumentException when {@code column} is not a key column
     */
    public String keyEquality(String column) {
        return comparison(column).equality();
    }

    /**
     * {@code left = right} for the key column {@code column}, as the statements write it: with its {@link
     * #keyEquality}, both sides cast to the operator class's type, schema-qualified, when the class compares
     * another type than the column's ({@code pg_catalog.text} for a varchar column, {@code public.citext} for a
     * domain over citext; a binary conversion, which the index still serves). Without the casts, an {@code =}
     * of that schema on the column's own type would be an exact match and win over the class's.
     *
     * @throws IllegalArgumentException when {@code column} is not a key column
     */
    public String keyEquals(String column, String left, String right) {
        KeyComparison comparison = comparison(column);
        String equality = " " + comparison.equality() + " ";
        String type = comparison.comparisonType();
        return type == null
                ? left + equality + right
                : "CAST(" + left + " AS " + type + ")" + equality + "CAST(" + right + " AS " + type + ")";
    }

    /**
     * What an upsert's {@code ON CONFLICT} names after a key column: {@code COLLATE schema.collation} (for a
     * collatable type) and {@code schema.opclass}, the class of {@link #keyEquality}, so that only a unique
     * index comparing as the statements do decides a conflict; empty when there is neither.
     *
     * @throws IllegalArgumentException when {@code column} is not a key column
     */
    public String keyArbiter(String column) {
        return comparison(column).arbiter();
    }

    /**
     * How the statements compare one key column, as the check found it: its equality, the type both sides
     * are cast to (null: none) and its conflict-target suffix.
     */
    private record KeyComparison(String equality, String comparisonType, String arbiter) {}

    /** A key column whose type has no default btree class (outside the index): pg_catalog's =, no cast. */
    private static final KeyComparison NO_CLASS = new KeyComparison(CatalogSql.EQUALS, null, "");

    private KeyComparison comparison(String column) {
        requireKeyColumn(column);
        return keyComparisons.getOrDefault(column, NO_CLASS);
    }

    private void requireKeyColumn(String column) {
        if (!keyColumns.contains(column)) {
            throw new IllegalArgumentException("'" + column + "' is not a key column of " + qualifiedName()
                    + "; its key columns are " + keyColumns);
        }
    }

    /**
     * Whether the fencing-db module's {@code fencing_guard} trigger, as {@code fencing.protect_table} installs it for
     * this table's fence column (AFTER UPDATE of any column, FOR EACH ROW, enabled for ordinary sessions, or {@code
     * ENABLE ALWAYS}), was on the table when it was checked. Without it, fencing-jdbc's writes are still fenced, but a
     * writer that bypasses the library can lower tokens. As installed, the guard does not fire in sessions with
     * {@code session_replication_role = replica} (a superuser's, such as a logical replication subscriber's apply
     * worker, which applies what the origin's guard accepted); {@code ALTER TABLE ... ENABLE ALWAYS TRIGGER
     * fencing_guard} makes it fire there too (docs/jdbc.md).
     */
    public boolean guarded() {
        return guarded;
    }

    /**
     * Whether the table is partitioned (its rows live in its partitions, each guarded by the trigger
     * PostgreSQL clones from it). Statements name any other table with {@code ONLY}, so that rows of an
     * inheritance child added after the check are never matched.
     */
    public boolean partitioned() {
        return partitioned;
    }

    /**
     * Checks that an upsert can name the key columns as its {@code ON CONFLICT} target: PostgreSQL takes as
     * the arbiter only a unique index on exactly those columns, and refuses the statement ("no unique or
     * exclusion constraint matching the ON CONFLICT specification") when the table is unique only on some of
     * them, which {@link Builder#build} accepts for updates and batches.
     *
     * <p>Refuses too a table with a key column of an {@code interval} type whose fields or precision round
     * ({@code interval day}, {@code interval(0)}): an upsert's insert assigns the key to the column, which rounds
     * {@code '1 day 10:00'} to {@code '1 day'}, and its {@code ON CONFLICT} would write the row of the rounded key,
     * where an update of the key finds none. The writer cannot read an interval as PostgreSQL does to refuse only
     * such keys; updates and batches compare the key as given, and are fine.
     *
     * @throws IllegalStateException naming the table and its key columns when no unique key that the table
     *     check accepts is on exactly the key columns; naming the column and its type for a rounding interval
     */
    public void requireUpsertable() {
        if (!keyedExactly) {
            throw new IllegalStateException("no upsert on " + qualifiedName() + ": its key columns " + keyColumns
                    + " are unique only through a unique key on some of them, and an upsert's ON CONFLICT "
                    + keyColumns + " needs a primary key or unique index on exactly those columns (immediate,"
                    + " valid, without predicate or expressions, each column with its own collation and its"
                    + " type's default operator class); add one, or key the FencedTable by that unique key's"
                    + " columns");
        }
        if (!roundingIntervalKeys.isEmpty()) {
            Map.Entry<String, String> column =
                    roundingIntervalKeys.entrySet().iterator().next();
            throw new IllegalStateException("no upsert on " + qualifiedName() + ": its key column '" + column.getKey()
                    + "' is " + column.getValue() + ", which rounds an interval assigned to it ('1 day 10:00' to"
                    + " '1 day' for interval day), and an upsert's insert assigns the key: its ON CONFLICT would"
                    + " write the row of the rounded key, where an update of the key finds none; update the rows"
                    + " (FencedUpdate, FencedBatch), or key the table by a column that keeps what it is given");
        }
    }

    /**
     * @throws IllegalArgumentException naming the key and the table's key columns when it has not one value
     *     per key column; naming the value and its column when the value would reach the column as another
     *     row's key (rounded by the cast, or by the column's own scale or precision, as a {@code numeric(5,2)}
     *     column keeps {@code 1.234} as {@code 1.23}, or cut by the cast, as a {@code date} column reads {@code
     *     2026-01-01T10:00} as {@code 2026-01-01}, or read by the session's settings, as a {@code LocalDateTime}
     *     for a {@code timestamp with time zone} column by its {@code TimeZone}, or stripped of its offset, as an
     *     {@code OffsetTime} for a {@code time} column, or sent as another text, as a
     *     string with a UTF-16 surrogate without its pair reaches the database with {@code ?} in its place, or
     *     spelled by the driver otherwise than by a batch, as a {@code java.time} date or moment outside the years
     *     1 to 9999: year 0 reaches a single-row write as 1 BC and a batch as a text PostgreSQL refuses, or a
     *     {@code BigDecimal} or date or time for a column of a text type, which the cast spells as PostgreSQL does
     *     and a batch as Java does, {@code 1E+2} as {@code '100'} and as {@code '1E+2'}, or a {@code Boolean} for an
     *     {@code integer} column, which the cast reads as 1 or 0); naming
     *     the text and its column when a text key for a date or time column is not ISO 8601 (with an offset for a
     *     column of instants, without one otherwise), or one for an {@code interval} column has a leading minus
     *     sign and an unsigned field, or a {@code PGInterval} for one a negative first field and only positive
     *     later ones, whose reading depends on the session's {@code IntervalStyle}, or text for one with a
     *     fraction the cast rounds to whole months or microseconds ({@code '1.01 years'}; docs/jdbc.md)
     */
    public RowKey requireKey(RowKey key) {
        return keyTypes.requireKey(key);
    }

    /**
     * Key value {@code i} of a key {@link #requireKey} accepted, as a batch sends it: as text that PostgreSQL
     * reads into the key column's type.
     */
    Object batchKeyValue(int i, Object value) {
        return keyTypes.batchKeyValue(i, value);
    }

    /**
     * @throws IllegalArgumentException naming the column and the table's columns when it is not one of
     *     them
     */
    public String requireColumn(String what, String column) {
        Identifiers.require(what, column);
        if (!columnTypes.containsKey(column)) {
            throw new IllegalArgumentException(
                    "unknown " + what + " '" + column + "' in " + qualifiedName() + "; its columns are " + columns());
        }
        return column;
    }

    @Override
    public String toString() {
        return qualifiedName() + " key " + keyColumns + " fence " + fenceColumn;
    }

    /** Describes a {@link FencedTable}; every setter checks its value, {@link #build(Jdbi)} checks the database. */
    public static final class Builder {
        private String schema = "public";
        private String table;
        private List<String> keyColumns;
        private String fenceColumn = DEFAULT_FENCE_COLUMN;

        private Builder() {}

        /** Default {@code public}. */
        public Builder schema(String schema) {
            this.schema = Identifiers.require("schema", schema);
            return this;
        }

        public Builder table(String table) {
            this.table = Identifiers.require("table", table);
            return this;
        }

        /** The columns of a unique key (usually the primary key), in the order {@link RowKey}s give values. */
        public Builder keyColumns(String... columns) {
            Objects.requireNonNull(columns, "keyColumns");
            if (columns.length == 0) {
                throw new IllegalArgumentException("at least one key column is needed");
            }
            Set<String> seen = new LinkedHashSet<>();
            for (String column : columns) {
                if (!seen.add(Identifiers.require("key column", column))) {
                    throw new IllegalArgumentException("key column '" + column + "' is named twice");
                }
            }
            this.keyColumns = new ArrayList<>(seen);
            return this;
        }

        /** Default {@value #DEFAULT_FENCE_COLUMN}. */
        public Builder fenceColumn(String fenceColumn) {
            this.fenceColumn = Identifiers.require("fence column", fenceColumn);
            return this;
        }

        /**
         * Checks the description against the database and returns the immutable table.
         *
         * @throws FencedTableException when the database does not match (nothing is changed in it)
         * @throws IllegalStateException when table or key columns were not set
         */
        public FencedTable build(Jdbi jdbi) {
            Objects.requireNonNull(jdbi, "jdbi");
            try {
                return jdbi.withHandle(this::check);
            } catch (JdbiException e) {
                throw unchecked(e);
            }
        }

        private FencedTableException unchecked(JdbiException e) {
            return new FencedTableException(
                    schema + "." + table, "could not check table " + schema + "." + table + ": " + e.getMessage(), e);
        }

        /** Like {@link #build(Jdbi)}, on a handle the caller holds. */
        public FencedTable build(Handle handle) {
            Objects.requireNonNull(handle, "handle");
            try {
                return check(handle);
            } catch (JdbiException e) {
                throw unchecked(e);
            }
        }

        /**
         * Refuses classic inheritance, as {@code fencing.protect_table} does; returns whether the table is
         * partitioned. Partitions are inheritance children too (relispartition), and a partitioned table's
         * partitions its children: both are fine, PostgreSQL clones the guard to every partition.
         */
        private boolean requireNoInheritance(Handle handle, String qualified) {
            Map<String, Object> found = StatementParser.query(
                            handle,
                            "SELECT c.relkind " + EQUALS + " 'p' AS partitioned,"
                                    + " (SELECT pg_catalog.string_agg(" + relationName("h.inhrelid")
                                    + ", ', ' ORDER BY "
                                    + relationName("h.inhrelid") + ")"
                                    + " FROM pg_catalog.pg_inherits AS h WHERE h.inhparent " + EQUALS + " c.oid"
                                    + " AND c.relkind OPERATOR(pg_catalog.<>) 'p') AS children,"
                                    + " (SELECT pg_catalog.string_agg(" + relationName("h.inhparent")
                                    + ", ', ' ORDER BY "
                                    + relationName("h.inhparent") + ")"
                                    + " FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid " + EQUALS + " c.oid"
                                    + " AND NOT c.relispartition) AS parents"
                                    + " FROM pg_catalog.pg_class AS c WHERE c.oid " + EQUALS + " " + RELATION)
                    .bind("schema", schema)
                    .bind("table", table)
                    .mapToMap()
                    .one();
            if (found.get("children") != null) {
                throw new FencedTableException(
                        qualified,
                        "table " + qualified + " has inheritance children (" + found.get("children") + "): its key"
                                + " does not constrain their rows and its guard trigger does not fire for them;"
                                + " fence each table on its own, or make it a partitioned table",
                        null);
            }
            if (found.get("parents") != null) {
                throw new FencedTableException(
                        qualified,
                        "table " + qualified + " is an inheritance child of " + found.get("parents") + ": writes"
                                + " through the parent bypass its key and guard; fence a table without inheritance",
                        null);
            }
            return Boolean.TRUE.equals(found.get("partitioned"));
        }

        /**
         * The checked table, as the catalog queries name it. Like every operator, function and catalog table in
         * them, named with its schema ({@link CatalogSql#EQUALS}): they run on the caller's session, whatever
         * its search path.
         */
        private static final String RELATION = "pg_catalog.to_regclass(pg_catalog.format('%I.%I', :schema, :table))";

        /** The key columns, bound as {@code keys}, as an SQL text array. */
        private static final String KEYS = "CAST(:keys AS pg_catalog.text[])";

        private static final String EQUALS = CatalogSql.EQUALS;

        /**
         * Whether {@code relation} (an expression of type regclass) has the {@code fencing_guard} trigger as
         * {@code fencing.protect_table} installs it for the fence column bound as {@code :fence}, or as PostgreSQL
         * clones it to a partition (a clone is an internal trigger before PostgreSQL 15, so that is not asked), with its
         * WHEN clause ({@code NEW.col < OLD.col}, pg_catalog's {@code <}) or none.
         */
        private static String guardedAt(String relation) {
            return "EXISTS (SELECT 1 FROM pg_catalog.pg_trigger"
                    + " WHERE tgrelid " + EQUALS + " " + relation
                    + " AND tgname " + EQUALS + " CAST('fencing_guard' AS pg_catalog.name)"
                    // fired in ordinary sessions: 'R' fires only under session_replication_role = replica, 'D' never
                    + " AND (tgenabled " + EQUALS + " 'O' OR tgenabled " + EQUALS + " 'A')"
                    // FOR EACH ROW (bit 0), AFTER (bit 1 clear: a BEFORE guard, from an earlier version, can be
                    // undone by a user's BEFORE trigger that fires after it), UPDATE (bit 4)
                    + " AND (CAST(tgtype AS pg_catalog.int4) OPERATOR(pg_catalog.&) 19) " + EQUALS + " 17"
                    // for every UPDATE: one limited to some columns (UPDATE OF stock) lets an UPDATE that sets
                    // only the token lower it
                    + " AND pg_catalog.cardinality(CAST(tgattr AS pg_catalog.int2[])) " + EQUALS + " 0"
                    // with the WHEN clause protect_table writes, or none (the function compares the tokens itself):
                    // another clause (... AND NEW.stock > 0) lets a lower token through whenever it is false. Read
                    // from the trigger's definition, which names the operator bare when this session's search path
                    // finds it first, so a bare < counts only when that is pg_catalog's
                    + " AND (tgqual IS NULL OR pg_catalog.substring(pg_catalog.pg_get_triggerdef(oid),"
                    + " ' WHEN [(](.*)[)] EXECUTE ') " + EQUALS
                    + " pg_catalog.format('(new.%I OPERATOR(pg_catalog.<) old.%I)', :fence, :fence)"
                    + " OR pg_catalog.substring(pg_catalog.pg_get_triggerdef(oid), ' WHEN [(](.*)[)] EXECUTE ') "
                    + EQUALS + " pg_catalog.format('(new.%I < old.%I)', :fence, :fence)"
                    + " AND pg_catalog.to_regoperator('<(bigint,bigint)') " + EQUALS
                    + " CAST('pg_catalog.<(pg_catalog.int8,pg_catalog.int8)' AS pg_catalog.regoperator))"
                    + " AND tgfoid " + EQUALS + " pg_catalog.to_regprocedure('fencing.guard_fence_token()')"
                    // and guarding this fence column, the function's first argument
                    + " AND substring(tgargs FROM 1 FOR position(pg_catalog.decode('00', 'hex') IN tgargs)"
                    + " OPERATOR(pg_catalog.-) 1) " + EQUALS + " pg_catalog.convert_to(:fence, 'UTF8'))";
        }

        /** The relation {@code oid} (an SQL oid expression) names, as text. */
        private static String relationName(String oid) {
            return "CAST(CAST(" + oid + " AS pg_catalog.regclass) AS pg_catalog.text)";
        }

        private FencedTable check(Handle handle) {
            if (table == null) {
                throw new IllegalStateException("table is not set");
            }
            if (keyColumns == null) {
                throw new IllegalStateException("key columns are not set");
            }
            if (keyColumns.contains(fenceColumn)) {
                throw new IllegalArgumentException("the fence column '" + fenceColumn + "' cannot be a key column");
            }
            String qualified = schema + "." + table;
            Map<String, String> types = new LinkedHashMap<>();
            Map<String, String> castTypes = new HashMap<>();
            Map<String, Boolean> nullable = new LinkedHashMap<>();
            Map<String, String> underlying = new LinkedHashMap<>();
            Map<String, Integer> scales = new HashMap<>();
            Map<String, Integer> lengths = new HashMap<>();
            Map<String, String> uncheckable = new LinkedHashMap<>();
            Map<String, String> roundingIntervals = new LinkedHashMap<>();
            // typmod -1, not NULL: with NULL, char(n) reads back as "character", which is char(1) in a
            // cast, so CAST(:key AS character) would truncate 'ABC' to 'A' and match another row.
            StatementParser.query(
                            handle,
                            "SELECT CAST(c.column_name AS pg_catalog.text) AS column_name,"
                                    + " CAST(c.is_nullable AS pg_catalog.text) AS is_nullable,"
                                    + " pg_catalog.format_type(a.atttypid, -1) AS base_type, a.atttypmod,"
                                    + " pg_catalog.format_type(a.atttypid, a.atttypmod) AS full_type,"
                                    // a domain (over a domain...) resolved to the type under it
                                    + " (WITH RECURSIVE d(oid, typtype, typbasetype) AS (SELECT t.oid, t.typtype,"
                                    + " t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid " + EQUALS + " a.atttypid"
                                    + " UNION ALL SELECT t.oid, t.typtype, t.typbasetype FROM pg_catalog.pg_type t"
                                    + " JOIN d ON t.oid " + EQUALS + " d.typbasetype WHERE d.typtype " + EQUALS
                                    + " 'd')"
                                    + " SELECT pg_catalog.format_type(d.oid, -1) FROM d"
                                    + " WHERE d.typtype OPERATOR(pg_catalog.<>) 'd') AS underlying_type,"
                                    // the type modifier of a domain's type (at most one domain of a chain has
                                    // one): a cast to the domain applies it
                                    + " (WITH RECURSIVE d(typtype, typbasetype, typtypmod) AS (SELECT t.typtype,"
                                    + " t.typbasetype, t.typtypmod FROM pg_catalog.pg_type t WHERE t.oid " + EQUALS
                                    + " a.atttypid UNION ALL SELECT t.typtype, t.typbasetype, t.typtypmod FROM"
                                    + " pg_catalog.pg_type t JOIN d ON t.oid " + EQUALS + " d.typbasetype"
                                    + " WHERE d.typtype " + EQUALS + " 'd')"
                                    + " SELECT pg_catalog.max(d.typtypmod) FROM d WHERE d.typtype " + EQUALS
                                    + " 'd') AS domain_typmod,"
                                    // the type named with its schema, whatever the search path (an array by
                                    // its element type's name: the statements append [] for arrays of it)
                                    + " (SELECT CASE WHEN et.oid IS NULL THEN pg_catalog.format('%I.%I', tn.nspname,"
                                    + " t.typname) ELSE pg_catalog.format('%I.%I[]', en.nspname, et.typname) END"
                                    + " FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace tn"
                                    + " ON tn.oid " + EQUALS + " t.typnamespace"
                                    + " LEFT JOIN pg_catalog.pg_type et ON et.oid " + EQUALS + " t.typelem"
                                    + " AND et.typarray " + EQUALS + " t.oid"
                                    + " LEFT JOIN pg_catalog.pg_namespace en ON en.oid " + EQUALS + " et.typnamespace"
                                    + " WHERE t.oid " + EQUALS + " a.atttypid) AS cast_type"
                                    + " FROM information_schema.columns c"
                                    + " JOIN pg_catalog.pg_attribute a ON a.attrelid " + EQUALS + " " + RELATION
                                    + " AND a.attname " + EQUALS + " c.column_name"
                                    + " WHERE c.table_schema " + EQUALS + " CAST(:schema AS pg_catalog.name)"
                                    + " AND c.table_name " + EQUALS + " CAST(:table AS pg_catalog.name)"
                                    + " ORDER BY c.ordinal_position")
                    .bind("schema", schema)
                    .bind("table", table)
                    .map((rs, ctx) -> {
                        types.put(rs.getString("column_name"), rs.getString("base_type"));
                        castTypes.put(rs.getString("column_name"), rs.getString("cast_type"));
                        underlying.put(rs.getString("column_name"), rs.getString("underlying_type"));
                        String column = rs.getString("column_name");
                        Integer scale = KeyColumnTypes.scale(rs.getString("base_type"), rs.getInt("atttypmod"));
                        int domainTypmod = rs.getInt("domain_typmod");
                        if (!rs.wasNull() && domainTypmod >= 0 && keyColumns.contains(column)) {
                            // a domain's modifier: the statements' cast of a key to the domain applies it
                            String under = rs.getString("underlying_type");
                            scale = KeyColumnTypes.scale(under, domainTypmod);
                            if ("character varying".equals(under) || "bpchar".equals(under)) {
                                lengths.put(column, domainTypmod - 4);
                            } else if ("\"bit\"".equals(under)
                                    || "bit varying".equals(under)
                                    || "interval".equals(under) && KeyColumnTypes.intervalRounds(domainTypmod)) {
                                uncheckable.put(column, under);
                            }
                        }
                        if (scale != null && keyColumns.contains(column)) {
                            scales.put(column, scale);
                        }
                        if ("character varying".equals(rs.getString("base_type"))
                                && rs.getInt("atttypmod") >= 4
                                && keyColumns.contains(column)) {
                            // the statements cast to varchar without the length, but an upsert's insert assigns
                            // the key to the column, which cuts spaces past it without an error
                            lengths.put(column, rs.getInt("atttypmod") - 4);
                        }
                        if ("interval".equals(rs.getString("base_type"))
                                && KeyColumnTypes.intervalRounds(rs.getInt("atttypmod"))
                                && keyColumns.contains(column)) {
                            roundingIntervals.put(column, rs.getString("full_type"));
                        }
                        nullable.put(rs.getString("column_name"), "YES".equals(rs.getString("is_nullable")));
                        return null;
                    })
                    .list();
            if (types.isEmpty()) {
                throw new FencedTableException(
                        qualified, "table " + qualified + " does not exist (or this user cannot see it)", null);
            }
            // before the key checks: a child usually lacks the parent's key, and inheritance is the reason
            boolean partitioned = requireNoInheritance(handle, qualified);
            for (String key : keyColumns) {
                if (!types.containsKey(key)) {
                    throw new FencedTableException(
                            qualified,
                            "key column '" + key + "' does not exist in " + qualified + "; its columns are "
                                    + types.keySet(),
                            null);
                }
                if (FLOATING.contains(underlying.get(key))) {
                    throw new FencedTableException(
                            qualified,
                            "key column '" + key + "' of " + qualified + " is " + types.get(key)
                                    + (types.get(key).equals(underlying.get(key))
                                            ? ""
                                            : " (" + underlying.get(key) + ")")
                                    + ": a floating-point value sent as a key may round to another row's; key the"
                                    + " table by an exact type",
                            null);
                }
                if ("money".equals(underlying.get(key))) {
                    // money reads its input by the session's lc_monetary and rounds it to that locale's digits
                    throw new FencedTableException(
                            qualified,
                            "key column '" + key + "' of " + qualified + " is " + types.get(key)
                                    + (types.get(key).equals(underlying.get(key)) ? "" : " (money)")
                                    + ": the cast to money rounds a key to the fractional digits of the session's"
                                    + " lc_monetary ('1.234' names row 1.23) and reads it by that locale, onto"
                                    + " another row's key, in ways the writer cannot check; key the table by numeric",
                            null);
                }
            }
            for (Map.Entry<String, String> column : uncheckable.entrySet()) {
                throw new FencedTableException(
                        qualified,
                        "key column '" + column.getKey() + "' of " + qualified + " is " + types.get(column.getKey())
                                + ", a domain over " + column.getValue() + " with a type modifier: the statements cast"
                                + " a key to the domain, which cuts or rounds it without an error (bit(3) reads '1011'"
                                + " as '101', interval day drops hours), onto another row's key, in ways the writer"
                                + " cannot check before it sends the key; key the table by a column without such a"
                                + " domain",
                        null);
            }
            if (!types.containsKey(fenceColumn)) {
                throw new FencedTableException(
                        qualified,
                        "fence column '" + fenceColumn + "' does not exist in " + qualified
                                + "; protect the table first: SELECT fencing.protect_table('" + qualified + "')",
                        null);
            }
            if (!"bigint".equals(types.get(fenceColumn)) || nullable.get(fenceColumn)) {
                throw new FencedTableException(
                        qualified,
                        "fence column '" + fenceColumn + "' of " + qualified + " must be BIGINT NOT NULL, is "
                                + types.get(fenceColumn) + (nullable.get(fenceColumn) ? " NULL" : " NOT NULL"),
                        null);
            }
            boolean[] uniqueKeys = StatementParser.query(
                            handle,
                            "SELECT "
                                    + CatalogSql.uniqueKey(RELATION, KEYS)
                                    + " AS some_columns, "
                                    + CatalogSql.exactUniqueKey(RELATION, KEYS)
                                    + " AS all_columns")
                    .bind("schema", schema)
                    .bind("table", table)
                    .bindArray("keys", String.class, keyColumns)
                    .map((rs, ctx) -> new boolean[] {rs.getBoolean("some_columns"), rs.getBoolean("all_columns")})
                    .one();
            boolean unique = uniqueKeys[0];
            if (!unique) {
                throw new FencedTableException(
                        qualified,
                        "key columns " + keyColumns + " are not a unique key of " + qualified
                                + " (no primary key or unique index on those columns, or on some of them, that is"
                                + " immediate, valid, without predicate or expressions, and compares each column"
                                + " with its own collation and its type's default operator class)",
                        null);
            }
            Map<String, KeyComparison> comparisons = new HashMap<>();
            StatementParser.query(handle, CatalogSql.keyEqualities(RELATION, KEYS))
                    .bind("schema", schema)
                    .bind("table", table)
                    .bindArray("keys", String.class, keyColumns)
                    .map((rs, ctx) -> {
                        String equality = rs.getString("equality");
                        String arbiter = rs.getString("arbiter");
                        comparisons.put(
                                rs.getString("column_name"),
                                new KeyComparison(
                                        equality == null ? NO_CLASS.equality() : equality,
                                        rs.getString("comparison_type"),
                                        arbiter == null ? "" : arbiter));
                        return null;
                    })
                    .list();
            boolean guarded = StatementParser.query(
                            handle,
                            "SELECT " + guardedAt(RELATION)
                                    // a partitioned table's rows live in its leaf partitions, each guarded by its
                                    // own trigger (cloned from the table's, and disabled or dropped on its own)
                                    + " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_partition_tree(" + RELATION
                                    + ") AS leaf WHERE leaf.isleaf AND NOT " + guardedAt("leaf.relid") + ")")
                    .bind("schema", schema)
                    .bind("table", table)
                    .bind("fence", fenceColumn)
                    .mapTo(Boolean.class)
                    .one();
            FencedTable result = new FencedTable(
                    schema,
                    table,
                    keyColumns,
                    fenceColumn,
                    types,
                    castTypes,
                    comparisons,
                    new KeyColumnTypes(qualified, keyColumns, types, underlying, scales, lengths),
                    guarded,
                    partitioned,
                    uniqueKeys[1],
                    roundingIntervals);
            if (guarded) {
                LOG.info(
                        "fenced table {} checked: key {}, fence column {}, guard trigger installed",
                        qualified,
                        keyColumns,
                        fenceColumn);
            } else {
                LOG.warn(
                        "fenced table {} checked: key {}, fence column {}, but no fencing_guard trigger guards it:"
                                + " writers that bypass fencing-jdbc can lower tokens; run"
                                + " SELECT fencing.protect_table('{}')",
                        qualified,
                        keyColumns,
                        fenceColumn,
                        qualified);
            }
            return result;
        }
    }
}
