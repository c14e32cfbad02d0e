package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InvariantCheckerTest {
    private final InvariantChecker checker = new InvariantChecker();

    private static InventorySnapshot.Order order(String sku, int quantity, long token, int read, int replaced) {
        return new InventorySnapshot.Order(sku, quantity, token, 1, read, replaced);
    }

    @Test
    void holdsWhenEveryUnitSoldLeftTheShelfOnceAndTheProjectionAgrees() {
        // given: a-1 sold 2 then 3 from 10; a-2 untouched
        InventorySnapshot snapshot = InventorySnapshot.of(
                Map.of("a-1", 10, "a-2", 5),
                Map.of("a-1", 5, "a-2", 5),
                List.of(order("a-1", 2, 1, 10, 10), order("a-1", 3, 2, 8, 8)));

        // when
        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 5));

        // then: a-2 has no events and projects to its initial stock
        assertThat(report.invariantsHold()).isTrue();
        assertThat(report.anomalyDetected()).isFalse();
        assertThat(report.ordersAccepted()).isEqualTo(2);
        assertThat(report.unitsSold()).isEqualTo(5);
        assertThat(report.oversoldUnits()).isZero();
        assertThat(report.lostUpdates()).isZero();
    }

    @Test
    void countsALostUpdateWhenAStaleWriteReplacedAnotherHoldersDecrement() {
        // given: token 1 reads 10, pauses; token 2 sells 3 (10 -> 7); token 1 resumes and writes 10 - 2 = 8
        InventorySnapshot snapshot = InventorySnapshot.of(
                Map.of("a-1", 10), Map.of("a-1", 8), List.of(order("a-1", 3, 2, 10, 10), order("a-1", 2, 1, 10, 7)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 8));

        assertThat(report.lostUpdates()).isEqualTo(1);
        assertThat(report.oversoldUnits()).isZero();
        assertThat(report.invariantsHold()).isFalse();
        assertThat(report.violations())
                .containsExactly("a-1: initial 10 - final 8 = 2 units left the shelf, but orders sold 5");
        assertThat(report.anomalyDetected()).isTrue();
    }

    @Test
    void countsOversoldUnitsBeyondTheInitialStock() {
        // given: 4 units; a lost update put 2 back on the shelf and they were sold again
        InventorySnapshot snapshot = InventorySnapshot.of(
                Map.of("a-1", 4),
                Map.of("a-1", 0),
                List.of(
                        order("a-1", 2, 2, 4, 4), // 4 -> 2
                        order("a-1", 2, 1, 4, 2), // stale: 4 -> 2 again, erasing token 2's sale
                        order("a-1", 2, 3, 2, 2))); // 2 -> 0

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 0));

        assertThat(report.unitsSold()).isEqualTo(6);
        assertThat(report.oversoldUnits()).isEqualTo(2);
        assertThat(report.lostUpdates()).isEqualTo(1);
        assertThat(report.invariantsHold()).isFalse();
    }

    @Test
    void reportsAProjectionThatDisagreesWithTheDatabase() {
        InventorySnapshot snapshot =
                InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 7), List.of(order("a-1", 3, 1, 10, 10)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 9));

        assertThat(report.lostUpdates()).isZero();
        assertThat(report.oversoldUnits()).isZero();
        assertThat(report.violations()).containsExactly("a-1: the Kafka projection says 9, the database 7");
        assertThat(report.anomalyDetected()).isTrue();
    }

    @Test
    void reportsNegativeStock() {
        InventorySnapshot snapshot =
                InventorySnapshot.of(Map.of("a-1", 1), Map.of("a-1", -1), List.of(order("a-1", 2, 1, 1, 1)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", -1));

        assertThat(report.violations())
                .contains("a-1: an order of 2 under token 1 left the stock at -1", "a-1: final stock is negative (-1)");
        assertThat(report.oversoldUnits()).isEqualTo(1);
    }

    @Test
    void aSkuWithoutEventsMustStillBeAtItsInitialStock() {
        InventorySnapshot snapshot = InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 10), List.of());

        assertThat(checker.check(snapshot, Map.of()).invariantsHold()).isTrue();
        assertThat(checker.check(snapshot, Map.of("a-1", 3)).invariantsHold()).isFalse();
    }
}
