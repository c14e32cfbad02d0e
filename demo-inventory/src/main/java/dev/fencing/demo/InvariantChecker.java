package dev.fencing.demo;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a run's end state, read from the database itself, and measures how wrong it is.
 *
 * <p>The invariants, per SKU:
 *
 * <ol>
 *   <li>initial stock − final stock = the sum of the quantities of the accepted orders (every unit sold
 *       left the shelf exactly once);
 *   <li>no stale write accepted: no order was written under a token lower than one already written to its
 *       SKU (orders in id order, which is commit order per SKU: each write holds the stock row's lock);
 *   <li>no stale record applied: the consumer applied no record whose token was lower than one it had
 *       already applied for the same SKU;
 *   <li>the stock projection built from the Kafka events equals the final stock in the database (a SKU
 *       without any event projects to its initial stock);
 *   <li>a sanity check, not a finding: the final stock, and the stock every order left behind ({@code
 *       stock_read − quantity}), are &gt;= 0. Workers refuse to sell below zero in every mode, so this
 *       fails only if the demo itself is broken.
 * </ol>
 *
 * <p>Cross-checks of the fenced run against what the coordinator saw ({@link #crossCheck}): a rejected
 * stale write of the paused worker, under the token it held, for every pause that landed between a read and its
 * write, and exactly as many records
 * dropped by the consumer as records published after a newer token of their SKU. In every mode, a pause
 * counts as landed only if the database holds the takeover's order ({@link #confirmLandings}).
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
 * InvariantReport report = new InvariantChecker().check(audit.snapshot(), projection.stock(), projection.staleApplied());
 * }</pre>
 */
final class InvariantChecker {

    /**
     * Checks {@code snapshot} against itself and against {@code projection} (SKU to projected stock).
     *
     * @param staleRecordsApplied records the consumer applied although it had applied a newer token of
     *     their SKU before (counted by the projection from the records' own token headers)
     */
    public InvariantReport check(
            InventorySnapshot snapshot, Map<String, Integer> projection, long staleRecordsApplied) {
        Map<String, Integer> sold = new TreeMap<>();
        Map<String, Long> newestWritten = new TreeMap<>();
        int lostUpdates = 0;
        List<InventorySnapshot.Order> staleWrites = new ArrayList<>();
        List<String> violations = new ArrayList<>();
        for (InventorySnapshot.Order order : snapshot.orders()) {
            sold.merge(order.sku(), order.quantity(), Integer::sum);
            long newest = newestWritten.getOrDefault(order.sku(), 0L);
            if (order.token() < newest) {
                staleWrites.add(order);
            } else {
                newestWritten.put(order.sku(), order.token());
            }
            if (order.stockReplaced() != order.stockRead()) {
                lostUpdates++;
            }
            if (order.stockRead() - order.quantity() < 0) {
                violations.add("sanity check: " + order.sku() + ": an order of " + order.quantity() + " under token "
                        + order.token() + " left the stock at " + (order.stockRead() - order.quantity()));
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
                violations.add("sanity check: " + sku + ": final stock is negative (" + finalStock + ")");
            }
            int projected = projection.getOrDefault(sku, initial);
            if (projected != finalStock) {
                violations.add(sku + ": the Kafka projection says " + projected + ", the database " + finalStock);
            }
        }
        if (!staleWrites.isEmpty()) {
            violations.add(staleWrites.size() + " stale write(s) accepted: orders written under a token lower than"
                    + " one already written to their SKU");
        }
        if (staleRecordsApplied > 0) {
            violations.add(staleRecordsApplied + " stale record(s) applied by the consumer after a newer token of"
                    + " their SKU");
        }
        return new InvariantReport(
                snapshot.orders().size(),
                unitsSold,
                oversold,
                lostUpdates,
                staleWrites,
                staleRecordsApplied,
                violations);
    }

    /**
     * The run's pauses as the database confirms them. The coordinator counts a pause as landed when a worker
     * reported a write (or publish) of the paused SKU under a newer token before the paused worker was
     * resumed; that report is the worker's own word. Here a landing counts only if the {@code orders} table
     * also holds an order of that SKU under that newer token (every takeover wrote one before it could
     * publish). A pause whose takeover the database does not show is returned as not landed, with one
     * violation line, so a worker that reports writes it did not make cannot make a run look tested.
     *
     * @return the pauses, those without a confirmed takeover with {@code nextToken} 0, and a line for each
     */
    public static Landings confirmLandings(InventorySnapshot snapshot, List<RunRecorder.Pause> pauses) {
        Set<String> written = new HashSet<>();
        for (InventorySnapshot.Order order : snapshot.orders()) {
            written.add(order.sku() + "/" + order.token());
        }
        List<RunRecorder.Pause> confirmed = new ArrayList<>();
        List<String> violations = new ArrayList<>();
        for (RunRecorder.Pause pause : pauses) {
            if (!pause.landed() || written.contains(pause.sku() + "/" + pause.nextToken())) {
                confirmed.add(pause);
                continue;
            }
            violations.add("cross-check: the pause of worker " + pause.worker() + " holding " + pause.sku()
                    + " token " + pause.token() + " was reported taken over by token " + pause.nextToken()
                    + ", but the database has no order of " + pause.sku() + " under that token; not counted"
                    + " as landed");
            confirmed.add(new RunRecorder.Pause(
                    pause.worker(),
                    pause.sku(),
                    pause.token(),
                    pause.point(),
                    pause.startMillis(),
                    pause.endMillis(),
                    0));
        }
        return new Landings(confirmed, violations);
    }

    /**
     * The outcome of {@link #confirmLandings}. Immutable.
     *
     * @param pauses every pause, landed only where the database confirms the takeover
     * @param violations one line per takeover the database does not show
     */
    public record Landings(List<RunRecorder.Pause> pauses, List<String> violations) {
        public Landings {
            pauses = List.copyOf(pauses);
            violations = List.copyOf(violations);
        }
    }

    /**
     * The fenced run's cross-checks between the database, the consumer and what the coordinator saw; one
     * line per failed check, empty when they hold (and always for the other modes, where nothing is
     * rejected or dropped).
     *
     * @param pauses the run's pauses
     * @param staleRecordsDropped records the fenced consumer dropped
     * @param events the workers' events, {@code REJECTED} and {@code PUBLISHED} ones (with partition and offset)
     */
    public static List<String> crossCheck(
            Mode mode, List<RunRecorder.Pause> pauses, long staleRecordsDropped, List<WorkerEvent> events) {
        if (mode != Mode.FENCED) {
            return List.of();
        }
        List<String> violations = new ArrayList<>();
        // Per pause, not in total: a rejection of some other worker must not stand in for the paused one's.
        pauses.stream()
                .filter(p -> p.landed() && p.point() != WorkerEvent.PausePoint.WRITE_PUBLISH)
                .filter(p -> events.stream()
                        .noneMatch(e -> e.kind() == WorkerEvent.Kind.REJECTED
                                && e.worker() == p.worker()
                                && e.sku().equals(p.sku())
                                && e.token() == p.token()))
                .forEach(p -> violations.add("cross-check: worker " + p.worker() + " was frozen holding " + p.sku()
                        + " token " + p.token() + " between its read and its write while token " + p.nextToken()
                        + " took it over, but PostgreSQL rejected no write of it under token " + p.token()));
        long publishedLate = publishedAfterANewerToken(events);
        if (staleRecordsDropped != publishedLate) {
            violations.add("cross-check: " + publishedLate + " records reached Kafka after a newer token of their SKU,"
                    + " but the consumer dropped " + staleRecordsDropped);
        }
        return violations;
    }

    /**
     * {@code PUBLISHED} events whose token is below that of an earlier record of the same SKU in Kafka (a
     * SKU's records share one partition; events carry the record's offset in {@code b}): exactly the records
     * a stale-dropping consumer must drop.
     */
    static long publishedAfterANewerToken(List<WorkerEvent> events) {
        Map<String, Long> highest = new TreeMap<>();
        return events.stream()
                .filter(e -> e.kind() == WorkerEvent.Kind.PUBLISHED)
                .sorted(Comparator.comparing(WorkerEvent::sku).thenComparingLong(WorkerEvent::b))
                .filter(e -> {
                    long newest = highest.getOrDefault(e.sku(), 0L);
                    highest.merge(e.sku(), e.token(), Math::max);
                    return e.token() < newest;
                })
                .count();
    }

    /**
     * The outcome of {@link #check}. Immutable.
     *
     * @param ordersAccepted order rows in the database
     * @param unitsSold the sum of their quantities
     * @param oversoldUnits see {@link InvariantChecker}
     * @param lostUpdates see {@link InvariantChecker}
     * @param staleWrites the orders written under a token lower than one already written to their SKU, in
     *     commit order
     * @param staleRecordsApplied records the consumer applied after a newer token of their SKU
     * @param violations one readable line per broken invariant and SKU; empty when all hold
     */
    public record InvariantReport(
            int ordersAccepted,
            int unitsSold,
            int oversoldUnits,
            int lostUpdates,
            List<InventorySnapshot.Order> staleWrites,
            long staleRecordsApplied,
            List<String> violations) {
        public InvariantReport {
            staleWrites = List.copyOf(staleWrites);
            violations = List.copyOf(violations);
        }

        /** Orders written under a token lower than one already written to their SKU. */
        public long staleWritesAccepted() {
            return staleWrites.size();
        }

        /** This report with {@code more} violations added. */
        public InvariantReport withViolations(List<String> more) {
            List<String> all = new ArrayList<>(violations);
            all.addAll(more);
            return new InvariantReport(
                    ordersAccepted, unitsSold, oversoldUnits, lostUpdates, staleWrites, staleRecordsApplied, all);
        }

        public boolean invariantsHold() {
            return violations.isEmpty();
        }

        /** Whether the checker saw the damage the demo is about: oversold units, lost updates or a broken invariant. */
        public boolean anomalyDetected() {
            return oversoldUnits > 0
                    || lostUpdates > 0
                    || !staleWrites.isEmpty()
                    || staleRecordsApplied > 0
                    || !violations.isEmpty();
        }
    }
}
