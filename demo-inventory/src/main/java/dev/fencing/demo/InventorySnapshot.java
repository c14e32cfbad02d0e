package dev.fencing.demo;

import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What the database holds at the end of a run: each SKU's initial and final stock, and every accepted
 * order. Immutable.
 *
 * @param initialStock units per SKU at the start
 * @param finalStock units per SKU now
 * @param orders every order row, in id order
 */
record InventorySnapshot(
        SortedMap<String, Integer> initialStock, SortedMap<String, Integer> finalStock, List<Order> orders) {

    public InventorySnapshot {
        initialStock = new TreeMap<>(initialStock);
        finalStock = new TreeMap<>(finalStock);
        orders = List.copyOf(orders);
        if (!initialStock.keySet().equals(finalStock.keySet())) {
            throw new IllegalArgumentException(
                    "SKUs differ: initial " + initialStock.keySet() + ", final " + finalStock.keySet());
        }
    }

    public static InventorySnapshot of(Map<String, Integer> initial, Map<String, Integer> finals, List<Order> orders) {
        return new InventorySnapshot(new TreeMap<>(initial), new TreeMap<>(finals), orders);
    }

    /**
     * One accepted order row.
     *
     * @param sku the SKU
     * @param quantity units sold
     * @param token the fence token of the lock grant the worker wrote under
     * @param worker the worker's number
     * @param stockRead the stock the worker read under its lock, before its work
     * @param stockReplaced the stock its UPDATE replaced (read in the write's own transaction, under the row
     *     lock); different from {@code stockRead} exactly when someone else wrote the row in between
     */
    public record Order(String sku, int quantity, long token, int worker, int stockRead, int stockReplaced) {}
}
