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
        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 5), 0);

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

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 8), 0);

        assertThat(report.lostUpdates()).isEqualTo(1);
        assertThat(report.oversoldUnits()).isZero();
        assertThat(report.invariantsHold()).isFalse();
        assertThat(report.staleWritesAccepted()).isEqualTo(1);
        assertThat(report.violations())
                .containsExactly(
                        "a-1: initial 10 - final 8 = 2 units left the shelf, but orders sold 5",
                        "1 stale write(s) accepted: orders written under a token lower than one already written to"
                                + " their SKU");
        assertThat(report.anomalyDetected()).isTrue();
    }

    @Test
    void countsAStaleWriteAcceptedPerSkuInCommitOrderEvenWithoutALostUpdate() {
        // given: on a-1, token 5 writes after token 6 (it re-read, so nothing was erased); a-2's token 1 is
        // lower than a-1's tokens but a different SKU
        InventorySnapshot snapshot = InventorySnapshot.of(
                Map.of("a-1", 10, "a-2", 10),
                Map.of("a-1", 7, "a-2", 9),
                List.of(order("a-1", 2, 6, 10, 10), order("a-2", 1, 1, 10, 10), order("a-1", 1, 5, 8, 8)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 7, "a-2", 9), 0);

        assertThat(report.staleWritesAccepted()).isEqualTo(1);
        assertThat(report.staleWrites()).containsExactly(order("a-1", 1, 5, 8, 8));
        assertThat(report.lostUpdates()).isZero();
        assertThat(report.invariantsHold()).isFalse();
        assertThat(report.anomalyDetected()).isTrue();
    }

    @Test
    void aStaleRecordAppliedByTheConsumerBreaksAnInvariant() {
        InventorySnapshot snapshot = InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 10), List.of());

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of(), 2);

        assertThat(report.staleRecordsApplied()).isEqualTo(2);
        assertThat(report.violations())
                .containsExactly("2 stale record(s) applied by the consumer after a newer token of their SKU");
        assertThat(report.anomalyDetected()).isTrue();
    }

    private static RunRecorder.Pause pause(WorkerEvent.PausePoint point, long nextToken) {
        return new RunRecorder.Pause(1, "a-1", 3, point, 0, 10, nextToken);
    }

    private static WorkerEvent published(long token, long offset) {
        return new WorkerEvent(offset, 2, WorkerEvent.Kind.PUBLISHED, "a-1", token, 0, offset);
    }

    private static WorkerEvent rejected(int worker, long token) {
        return new WorkerEvent(0, worker, WorkerEvent.Kind.REJECTED, "a-1", token, 4, 0);
    }

    @Test
    void crossCheckWantsARejectionOfThePausedWorkerForEveryPauseThatLandedBeforeAWrite() {
        // worker 1 held a-1 under token 3
        List<RunRecorder.Pause> pauses = List.of(
                pause(WorkerEvent.PausePoint.READ_WRITE, 4),
                pause(WorkerEvent.PausePoint.READ_WRITE, 0), // nobody took over: no rejection owed
                pause(WorkerEvent.PausePoint.WRITE_PUBLISH, 5));

        assertThat(InvariantChecker.crossCheck(Mode.FENCED, pauses, 0, List.of(rejected(1, 3))))
                .isEmpty();
        String missing = "cross-check: worker 1 was frozen holding a-1 token 3 between its read and its write while"
                + " token 4 took it over, but PostgreSQL rejected no write of it under token 3";
        assertThat(InvariantChecker.crossCheck(Mode.FENCED, pauses, 0, List.of()))
                .containsExactly(missing);
        // as many rejections as landed pauses is not enough: they must be the paused worker's, under its token
        assertThat(InvariantChecker.crossCheck(Mode.FENCED, pauses, 0, List.of(rejected(2, 3))))
                .containsExactly(missing);
        assertThat(InvariantChecker.crossCheck(Mode.FENCED, pauses, 0, List.of(rejected(1, 6))))
                .containsExactly(missing);
        // the other modes reject and drop nothing by design
        assertThat(InvariantChecker.crossCheck(Mode.UNFENCED, pauses, 0, List.of()))
                .isEmpty();
    }

    @Test
    void crossCheckWantsExactlyTheRecordsPublishedAfterANewerTokenDropped() {
        // offsets 0..3: tokens 1, 3, 2 (late), 4
        List<WorkerEvent> events = List.of(published(1, 0), published(3, 1), published(2, 2), published(4, 3));

        assertThat(InvariantChecker.publishedAfterANewerToken(events)).isEqualTo(1);
        assertThat(InvariantChecker.crossCheck(Mode.FENCED, List.of(), 1, events))
                .isEmpty();
        assertThat(InvariantChecker.crossCheck(Mode.FENCED, List.of(), 0, events))
                .containsExactly("cross-check: 1 records reached Kafka after a newer token of their SKU, but the"
                        + " consumer dropped 0");
    }

    @Test
    void aPauseCountsAsLandedOnlyIfTheDatabaseHoldsTheTakeoversOrder() {
        // given: token 4 wrote a-1 (in the database); token 9 is what a worker reported, but never reached it
        InventorySnapshot snapshot =
                InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 8), List.of(order("a-1", 2, 4, 10, 10)));
        List<RunRecorder.Pause> pauses = List.of(
                pause(WorkerEvent.PausePoint.READ_WRITE, 4),
                pause(WorkerEvent.PausePoint.WRITE_PUBLISH, 9),
                pause(WorkerEvent.PausePoint.READ_WRITE, 0));

        // when
        InvariantChecker.Landings landings = InvariantChecker.confirmLandings(snapshot, pauses);

        // then: only the first landed; the unconfirmed one is kept as a pause nobody took over, and said so
        assertThat(landings.pauses()).extracting(RunRecorder.Pause::nextToken).containsExactly(4L, 0L, 0L);
        assertThat(landings.violations())
                .containsExactly("cross-check: the pause of worker 1 holding a-1 token 3 was reported taken over by"
                        + " token 9, but the database has no order of a-1 under that token; not counted as landed");
        // a takeover of another SKU under that token does not count either
        InventorySnapshot otherSku = InventorySnapshot.of(
                Map.of("a-1", 10, "a-2", 10), Map.of("a-1", 10, "a-2", 8), List.of(order("a-2", 2, 9, 10, 10)));
        assertThat(InvariantChecker.confirmLandings(otherSku, List.of(pause(WorkerEvent.PausePoint.READ_WRITE, 9)))
                        .pauses())
                .noneMatch(RunRecorder.Pause::landed);
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

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 0), 0);

        assertThat(report.unitsSold()).isEqualTo(6);
        assertThat(report.oversoldUnits()).isEqualTo(2);
        assertThat(report.lostUpdates()).isEqualTo(1);
        assertThat(report.invariantsHold()).isFalse();
    }

    @Test
    void reportsAProjectionThatDisagreesWithTheDatabase() {
        InventorySnapshot snapshot =
                InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 7), List.of(order("a-1", 3, 1, 10, 10)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", 9), 0);

        assertThat(report.lostUpdates()).isZero();
        assertThat(report.oversoldUnits()).isZero();
        assertThat(report.violations()).containsExactly("a-1: the Kafka projection says 9, the database 7");
        assertThat(report.anomalyDetected()).isTrue();
    }

    @Test
    void reportsNegativeStock() {
        InventorySnapshot snapshot =
                InventorySnapshot.of(Map.of("a-1", 1), Map.of("a-1", -1), List.of(order("a-1", 2, 1, 1, 1)));

        InvariantChecker.InvariantReport report = checker.check(snapshot, Map.of("a-1", -1), 0);

        assertThat(report.violations())
                .contains(
                        "sanity check: a-1: an order of 2 under token 1 left the stock at -1",
                        "sanity check: a-1: final stock is negative (-1)");
        assertThat(report.oversoldUnits()).isEqualTo(1);
    }

    @Test
    void aSkuWithoutEventsMustStillBeAtItsInitialStock() {
        InventorySnapshot snapshot = InventorySnapshot.of(Map.of("a-1", 10), Map.of("a-1", 10), List.of());

        assertThat(checker.check(snapshot, Map.of(), 0).invariantsHold()).isTrue();
        assertThat(checker.check(snapshot, Map.of("a-1", 3), 0).invariantsHold())
                .isFalse();
    }
}
