package dev.fencing.verify.checker;

import java.sql.Array;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the run left in the database, read after it ended: each resource's list of operation ids (the rows the
 * writers appended to), each record key's list of applied operation ids (what the consumers applied), and the
 * dead letters. The tables are the checker's contract with the workload (see the package documentation):
 *
 * <pre>
 * &lt;schema&gt;.resources    (resource TEXT PRIMARY KEY, ids BIGINT[] NOT NULL, ...)
 * &lt;schema&gt;.applied      (record_key TEXT PRIMARY KEY, ids BIGINT[] NOT NULL)
 * &lt;schema&gt;.dead_letters (origin_partition INT, origin_offset BIGINT, record_key TEXT, op BIGINT,
 *                         reason TEXT, detail TEXT)
 * </pre>
 *
 * @param lists resource to its list, in list order
 * @param applied record key to the ids applied for it, in the order they were applied
 * @param deadLetters every dead letter, by origin partition and offset
 */
public record Observed(Map<String, List<Long>> lists, Map<String, List<Long>> applied, List<DeadLetter> deadLetters) {

    public Observed {
        lists = Collections.unmodifiableMap(new TreeMap<>(lists));
        applied = Collections.unmodifiableMap(new TreeMap<>(applied));
        deadLetters = List.copyOf(deadLetters);
    }

    /**
     * Reads the three tables of {@code schema} with plain SQL.
     *
     * A NULL where the checker needs a value (a resource or record key, a list, an id in a list, a dead letter's
     * origin partition or offset, or its reason) is refused: read as 0 or left out, it would hide an id or invent
     * one, and no workload writes one, so the tables are not what the run left.
     *
     * @param schema a lower-case SQL identifier
     * @throws IllegalArgumentException if {@code schema} is not one
     * @throws IllegalStateException naming the statement when the database refuses it, or naming the table, the
     *     row and the column of a NULL the checker cannot check
     */
    public static Observed read(Connection connection, String schema) {
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("schema must be a lower-case SQL identifier, got '" + schema + "'");
        }
        Map<String, List<Long>> lists = lists(connection, schema + ".resources", "resource");
        Map<String, List<Long>> applied = lists(connection, schema + ".applied", "record_key");
        List<DeadLetter> deadLetters = new ArrayList<>();
        String sql = "SELECT op, record_key, reason, detail, origin_partition, origin_offset FROM " + schema
                + ".dead_letters ORDER BY origin_partition, origin_offset";
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            while (rows.next()) {
                long op = rows.getLong(1);
                Long id = rows.wasNull() ? null : op;
                String key = rows.getString(2);
                String reason = rows.getString(3);
                int partition = rows.getInt(5);
                boolean partitionNull = rows.wasNull();
                long offset = rows.getLong(6);
                boolean offsetNull = rows.wasNull();
                String column = reason == null
                        ? "reason"
                        : partitionNull ? "origin_partition" : offsetNull ? "origin_offset" : null;
                if (column != null) {
                    throw new IllegalStateException(schema + ".dead_letters holds a dead letter of key " + key
                            + " (op " + id + ", origin partition " + (partitionNull ? "NULL" : partition)
                            + " offset " + (offsetNull ? "NULL" : offset) + ") whose " + column
                            + " is NULL: the checker cannot place or judge it");
                }
                deadLetters.add(new DeadLetter(id, key, reason, rows.getString(4), partition, offset));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("'" + sql + "' failed: " + e.getMessage(), e);
        }
        return new Observed(lists, applied, deadLetters);
    }

    private static Map<String, List<Long>> lists(Connection connection, String table, String keyColumn) {
        String sql = "SELECT " + keyColumn + ", ids FROM " + table;
        Map<String, List<Long>> lists = new TreeMap<>();
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            while (rows.next()) {
                String key = rows.getString(1);
                Array array = rows.getArray(2);
                if (key == null || array == null) {
                    throw new IllegalStateException(table + " holds a row whose " + (key == null ? keyColumn : "ids")
                            + " is NULL (" + keyColumn + " " + (key == null ? "NULL" : key) + "): the checker cannot"
                            + " check a list it cannot name or read");
                }
                List<Long> ids = new ArrayList<>();
                Object[] elements = (Object[]) array.getArray();
                for (int i = 0; i < elements.length; i++) {
                    if (elements[i] == null) {
                        throw new IllegalStateException(table + " row " + keyColumn + " " + key + " holds NULL at"
                                + " position " + (i + 1) + " of its ids: no id, so not one any client invoked, and the"
                                + " checker cannot tell which operation wrote it");
                    }
                    ids.add(((Number) elements[i]).longValue());
                }
                array.free();
                lists.put(key, ids);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("'" + sql + "' failed: " + e.getMessage(), e);
        }
        return lists;
    }
}
