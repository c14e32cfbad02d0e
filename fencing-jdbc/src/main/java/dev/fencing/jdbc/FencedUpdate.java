package dev.fencing.jdbc;

import dev.fencing.jdbc.internal.Bindings;
import dev.fencing.jdbc.internal.Identifiers;
import dev.fencing.jdbc.internal.Utf8Text;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One fenced UPDATE of one row, described once and run with {@link FencedWriter#update} or {@link
 * FencedWriter#tryUpdate} under a token. The writer adds the fence condition ({@code last_fence_token <
 * :token} or {@code <=}) and sets the fence column to the token, in the same statement.
 *
 * <pre>{@code
 * FencedUpdate reserve = FencedUpdate.builder(inventory)
 *         .key(RowKey.of("A-1"))
 *         .setExpression("stock", "stock - :qty")   // an SQL expression over the row
 *         .set("updated_by", "checkout")             // a plain value
 *         .where("stock >= :qty")                    // extra predicate: PredicateFailed when false
 *         .bind("qty", 3)
 *         .build();
 * WriteOutcome outcome = writer.tryUpdate(reserve, lease.token());
 * }</pre>
 *
 * Column names are checked against the table and quoted. Expressions and predicates are SQL written by
 * the developer, like the SQL given to Jdbi: they must be constants in the code, with every value passed
 * through {@link Builder#bind}. Each fragment is read the way PostgreSQL's lexer reads it (dollar quotes,
 * {@code E''}, {@code U&''} and bit strings, quoted identifiers) and refused, with a message naming it,
 * unless it is one self-contained expression: literals closed, parentheses balanced, no {@code ;}, no
 * comment, no backslash in a {@code '...'} string (its meaning depends on {@code
 * standard_conforming_strings}), no {@code $1}, no lone {@code ?} (the JDBC driver's positional parameter;
 * write PostgreSQL's {@code ?} operators as {@code ??}). PostgreSQL receives each fragment exactly as it
 * was read: Jdbi's SQL parser and template engine do not rewrite the writer's statements. Every {@code
 * :name} they use must be bound and every binding used.
 *
 * <p>Fragments must be free of side effects (no {@code nextval}, {@code set_config}, {@code dblink_exec},
 * functions that write): the fence governs only the row's UPDATE. PostgreSQL may evaluate a predicate for
 * a row whose token is stale, and when nothing was written the writer evaluates it again to report why, so
 * a side effect in a fragment is neither fenced nor run once. A fragment may not use the name {@code
 * fence_applied}, the reporting statement's own {@code WITH} query. Immutable and thread-safe; reuse it.
 */
public final class FencedUpdate {
    private final FencedTable table;
    private final RowKey key;
    private final String setClause;
    private final String predicate;
    private final Map<String, Object> bindings;

    private FencedUpdate(Builder builder) {
        this.table = builder.table;
        this.key = builder.key;
        this.setClause = String.join(", ", builder.assignments);
        this.predicate = builder.predicates.isEmpty() ? null : "(" + String.join(") AND (", builder.predicates) + ")";
        this.bindings = Collections.unmodifiableMap(new LinkedHashMap<>(builder.bindings));
    }

    public static Builder builder(FencedTable table) {
        return new Builder(Objects.requireNonNull(table, "table"));
    }

    public FencedTable table() {
        return table;
    }

    public RowKey key() {
        return key;
    }

    /** The SET list this update contributes (quoted columns, casts, expressions), for diagnostics. */
    public String setClause() {
        return setClause;
    }

    /** The extra predicates joined with AND, or {@code null} when there are none. */
    public String predicate() {
        return predicate;
    }

    /** Every named value the statement binds besides the key and the token. */
    public Map<String, Object> bindings() {
        return bindings;
    }

    @Override
    public String toString() {
        return "UPDATE " + table.qualifiedName() + " SET " + setClause + " WHERE key = " + key
                + (predicate == null ? "" : " AND " + predicate);
    }

    /** Builds a {@link FencedUpdate}; every setter checks its value against the table. */
    public static final class Builder {
        private final FencedTable table;
        private RowKey key;
        private final List<String> assignments = new ArrayList<>();
        private final Set<String> assignedColumns = new LinkedHashSet<>();
        private final List<String> predicates = new ArrayList<>();
        private final Set<String> referenced = new LinkedHashSet<>();
        private final Map<String, Object> bindings = new LinkedHashMap<>();
        private int values;

        private Builder(FencedTable table) {
            this.table = table;
        }

        /** The row to update: one value per key column, in the table's key order. */
        public Builder key(RowKey key) {
            this.key = table.requireKey(key);
            return this;
        }

        /** Shorthand for {@code key(RowKey.of(values))}. */
        public Builder key(Object... values) {
            return key(RowKey.of(values));
        }

        /** {@code column = value}; the value is bound, cast to the column's type. */
        public Builder set(String column, Object value) {
            String type = assignable(column);
            if (value instanceof CharSequence text) {
                Utf8Text.requireEncodable(text, "the value for column " + column + " of " + table.qualifiedName());
            }
            String name = Bindings.RESERVED_PREFIX + "value_" + values++;
            bindings.put(name, value);
            assignments.add(Identifiers.quote(column) + " = CAST(:" + name + " AS " + type + ")");
            return this;
        }

        /** {@code column = (expression)}, for example {@code ("stock", "stock - :qty")}. */
        public Builder setExpression(String column, String expression) {
            assignable(column);
            referenced.addAll(Bindings.referencedNames("expression for " + column, expression));
            assignments.add(Identifiers.quote(column) + " = (" + expression + ")");
            return this;
        }

        /**
         * An extra condition the row must meet, for example {@code stock >= :qty}; several are joined with
         * AND. When it is false the outcome is {@link WriteOutcome.PredicateFailed}.
         */
        public Builder where(String predicate) {
            referenced.addAll(Bindings.referencedNames("predicate", predicate));
            predicates.add(predicate);
            return this;
        }

        /** A value for {@code :name} in an expression or predicate. Names starting {@code fence_} are reserved. */
        public Builder bind(String name, Object value) {
            Bindings.requireName(name);
            if (bindings.containsKey(name)) {
                throw new IllegalArgumentException("'" + name + "' is bound twice");
            }
            if (value instanceof CharSequence text) {
                Utf8Text.requireEncodable(text, "the value bound to '" + name + "'");
            }
            bindings.put(name, value);
            return this;
        }

        /** @throws IllegalStateException when the key or every assignment is missing, or bindings do not match */
        public FencedUpdate build() {
            if (key == null) {
                throw new IllegalStateException("no key: call key(...)");
            }
            if (assignments.isEmpty()) {
                throw new IllegalStateException("nothing to set: call set(...) or setExpression(...)");
            }
            Set<String> bound = new LinkedHashSet<>();
            for (String name : bindings.keySet()) {
                if (!name.startsWith(Bindings.RESERVED_PREFIX)) {
                    bound.add(name);
                }
            }
            Set<String> missing = new LinkedHashSet<>(referenced);
            missing.removeAll(bound);
            if (!missing.isEmpty()) {
                throw new IllegalStateException("parameters " + missing + " are used but not bound");
            }
            Set<String> unused = new LinkedHashSet<>(bound);
            unused.removeAll(referenced);
            if (!unused.isEmpty()) {
                throw new IllegalStateException("parameters " + unused + " are bound but not used");
            }
            return new FencedUpdate(this);
        }

        private String assignable(String column) {
            table.requireColumn("column", column);
            if (column.equals(table.fenceColumn())) {
                throw new IllegalArgumentException(
                        "the fence column '" + column + "' is set by the writer, not by you");
            }
            if (table.keyColumns().contains(column)) {
                throw new IllegalArgumentException("key column '" + column + "' cannot be changed by a fenced update");
            }
            if (!assignedColumns.add(column)) {
                throw new IllegalArgumentException("column '" + column + "' is set twice");
            }
            return table.castType(column).orElseThrow();
        }
    }
}
