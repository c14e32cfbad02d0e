package dev.fencing.demo;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jdbi.v3.core.Jdbi;

/**
 * The checker's reads: the end state of one mode's tables, read with SQL of its own in one transaction. It
 * shares no code with the workload's {@link InventoryDatabase} beyond the schema's name, so a bug in how
 * workers read or write cannot also hide in how their results are checked. Thread-safe.
 *
 * <pre>{@code
 * InventorySnapshot snapshot = new InventoryAudit(jdbi, Mode.FENCED).snapshot();
 * }</pre>
 */
final class InventoryAudit {
    private final Jdbi jdbi;
    private final String schema;

    InventoryAudit(Jdbi jdbi, Mode mode) {
        this.jdbi = jdbi;
        this.schema = InventoryDatabase.schemaOf(mode);
    }

    /** Every SKU's initial and final stock and every order row in id order (commit order per SKU). */
    InventorySnapshot snapshot() {
        return jdbi.inTransaction(handle -> {
            Map<String, Integer> initial = new TreeMap<>();
            Map<String, Integer> finals = new TreeMap<>();
            handle.createQuery("SELECT sku, initial_stock, stock FROM " + schema + ".stock")
                    .mapToMap()
                    .forEach(row -> {
                        initial.put((String) row.get("sku"), ((Number) row.get("initial_stock")).intValue());
                        finals.put((String) row.get("sku"), ((Number) row.get("stock")).intValue());
                    });
            List<InventorySnapshot.Order> orders = handle.createQuery(
                            "SELECT sku, quantity, token, worker, stock_read, stock_replaced FROM " + schema
                                    + ".orders ORDER BY id")
                    .map((rs, ctx) -> new InventorySnapshot.Order(
                            rs.getString("sku"),
                            rs.getInt("quantity"),
                            rs.getLong("token"),
                            rs.getInt("worker"),
                            rs.getInt("stock_read"),
                            rs.getInt("stock_replaced")))
                    .list();
            return InventorySnapshot.of(initial, finals, orders);
        });
    }
}
