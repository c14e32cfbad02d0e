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
     * @param schema a lower-case SQL identifier
     * @throws IllegalArgumentException if {@code schema} is not one
     * @throws IllegalStateException naming the statement when the database refuses it
     */
    public static Observed read(Connection connection, String schema) {
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("schema must be a lower-case SQL identifier, got '" + schema + "'");
        }
        Map<String, List<Long>> lists = lists(connection, "SELECT resource, ids FROM " + schema + ".resources");
        Map<String, List<Long>> applied = lists(connection, "SELECT record_key, ids FROM " + schema + ".applied");
        List<DeadLetter> deadLetters = new ArrayList<>();
        String sql = "SELECT op, record_key, reason, detail, origin_partition, origin_offset FROM " + schema
                + ".dead_letters ORDER BY origin_partition, origin_offset";
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            while (rows.next()) {
                long op = rows.getLong(1);
                deadLetters.add(new DeadLetter(
                        rows.wasNull() ? null : op,
                        rows.getString(2),
                        rows.getString(3),
                        rows.getString(4),
                        rows.getInt(5),
                        rows.getLong(6)));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("'" + sql + "' failed: " + e.getMessage(), e);
        }
        return new Observed(lists, applied, deadLetters);
    }

    private static Map<String, List<Long>> lists(Connection connection, String sql) {
        Map<String, List<Long>> lists = new TreeMap<>();
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            while (rows.next()) {
                Array array = rows.getArray(2);
                List<Long> ids = new ArrayList<>();
                for (Object element : (Object[]) array.getArray()) {
                    ids.add(((Number) element).longValue());
                }
                array.free();
                lists.put(rows.getString(1), ids);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("'" + sql + "' failed: " + e.getMessage(), e);
        }
        return lists;
    }
}
