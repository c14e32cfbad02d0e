package dev.fencing.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a run's end state, read from the database itself, and measures how wrong it is.
 *
 * <p>The invariants, per SKU:
 *
 * <ol>
 *   <li>initial stock − final stock = the sum of the quantities of the accepted orders (every unit sold
 *       left the shelf exactly once);
 *   <li>stock never negative: the final stock, and the stock every order left behind ({@code stock_read −
 *       quantity}), are &gt;= 0;
 *   <li>the stock projection built from the Kafka events equals the final stock in the database (a SKU
 *       without any event projects to its initial stock).
 * </ol>
 *
 * <p>The measures:
 *
 * <ul>
 *   <li><b>oversold units</b>: per SKU, {@code max(0, units sold − initial stock)}, summed: units promised
 *       to customers that never existed;
 *   <li><b>lost updates</b>: accepted orders whose write replaced a stock value other than the one the worker
 *       read under its lock ({@code stock_replaced != stock_read}). Each one is a read-modify-write that
 *       erased the decrements other holders committed between its read and its write; it can only happen
 *       when a paused holder writes after its lock passed on.
 * </ul>
 *
 * Stateless and thread-safe.
 *
 * <pre>{@code
 * InvariantReport report = new InvariantChecker().check(database.snapshot(), projection.stock());
 * }</pre>
 */
final class InvariantChecker {

    /** Checks {@code snapshot} against itself and against {@code projection} (SKU to projected stock). */
    public InvariantReport check(InventorySnapshot snapshot, Map<String, Integer> projection) {
        Map<String, Integer> sold = new TreeMap<>();
        int lostUpdates = 0;
        List<String> violations = new ArrayList<>();
        for (InventorySnapshot.Order order : snapshot.orders()) {
            sold.merge(order.sku(), order.quantity(), Integer::sum);
            if (order.stockReplaced() != order.stockRead()) {
                lostUpdates++;
            }
            if (order.stockRead() - order.quantity() < 0) {
                violations.add(order.sku() + ": an order of " + order.quantity() + " under token " + order.token()
                        + " left the stock at " + (order.stockRead() - order.quantity()));
            }
            if (!snapshot.initialStock().containsKey(order.sku())) {
                violations.add("an order names unknown SKU " + order.sku());
            }
        }
        int unitsSold = 0;
        int oversold = 0;
        for (Map.Entry<String, Integer> entry : snapshot.initialStock().entrySet()) {
            String sku = entry.getKey();
            int initial = entry.getValue();
            int finalStock = snapshot.finalStock().get(sku);
            int skuSold = sold.getOrDefault(sku, 0);
            unitsSold += skuSold;
            oversold += Math.max(0, skuSold - initial);
            if (initial - finalStock != skuSold) {
                violations.add(sku + ": initial " + initial + " - final " + finalStock + " = " + (initial - finalStock)
                        + " units left the shelf, but orders sold " + skuSold);
            }
            if (finalStock < 0) {
                violations.add(sku + ": final stock is negative (" + finalStock + ")");
            }
            int projected = projection.getOrDefault(sku, initial);
            if (projected != finalStock) {
                violations.add(sku + ": the Kafka projection says " + projected + ", the database " + finalStock);
            }
        }
        return new InvariantReport(snapshot.orders().size(), unitsSold, oversold, lostUpdates, violations);
    }

    /**
     * The outcome of {@link #check}. Immutable.
     *
     * @param ordersAccepted order rows in the database
     * @param unitsSold the sum of their quantities
     * @param oversoldUnits see {@link InvariantChecker}
     * @param lostUpdates see {@link InvariantChecker}
     * @param violations one readable line per broken invariant and SKU; empty when all hold
     */
    public record InvariantReport(
            int ordersAccepted, int unitsSold, int oversoldUnits, int lostUpdates, List<String> violations) {
        public InvariantReport {
            violations = List.copyOf(violations);
        }

        public boolean invariantsHold() {
            return violations.isEmpty();
        }

        /** Whether the checker saw the damage the demo is about: oversold units, lost updates or a broken invariant. */
        public boolean anomalyDetected() {
            return oversoldUnits > 0 || lostUpdates > 0 || !violations.isEmpty();
        }
    }
}
