package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.verify.checker.HistoryEntry.Function;
import dev.fencing.verify.checker.HistoryEntry.Type;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hand-made read/write-lock histories on r1: client 1 writes under write token 2, client 2 reads under read token
 * 3, client 3 writes under write token 4; variations break one property the checker must flag, and the clean one
 * passes.
 */
class RwLockCheckerTest {
    private static final Duration UNCERTAINTY = Duration.ofMillis(5);

    private final List<HistoryEntry> entries = new ArrayList<>();
    private final List<Read> reads = new ArrayList<>();

    /** A write invoked at {@code time}, completed 5 ms later. */
    private void write(long op, int client, long token, long time, Type outcome) {
        entries.add(new HistoryEntry(
                Type.INVOKE, Function.APPEND, op, client, "r1", token, time, "update", null, null, null, null));
        entries.add(new HistoryEntry(
                outcome,
                Function.APPEND,
                op,
                client,
                "r1",
                token,
                time + 5,
                null,
                null,
                null,
                null,
                outcome == Type.FAIL ? "rejected: stored token 4" : null));
    }

    private void read(long op, int client, long token, long invoked, Outcome outcome, long returned, int seen) {
        reads.add(new Read(
                op,
                client,
                "r1",
                token,
                invoked,
                outcome,
                returned,
                outcome == Outcome.OK ? seen : -1,
                outcome == Outcome.FAIL ? "stale: stored token 4 above the read token" : null));
    }

    private CheckResult check(List<Long> list) {
        return RwLockChecker.check(History.of(entries, List.of(), reads), Map.of("r1", list), UNCERTAINTY);
    }

    private static List<ViolationKind> kinds(CheckResult result) {
        return result.violations().stream().map(Violation::kind).toList();
    }

    @Test
    void readsThatSawEveryWriteAcknowledgedBeforeThemHaveNoViolations() {
        // given: client 2 reads between the two writes and sees the first
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.OK, 1_150, 1);
        write(3_000_001, 3, 4, 1_200, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(result.violations()).isEmpty();
        assertThat(result.operations()).isEqualTo(3);
        assertThat(result.ok()).isEqualTo(3);
    }

    @Test
    void aReadReturnedAfterAWriteItDidNotSeeWasAcknowledgedIsAStaleRead() {
        // given: client 2 read at 1 100 (one id), was paused, and returned at 4 000, after client 3's write
        // acknowledged at 1 205
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.OK, 4_000, 1);
        write(3_000_001, 3, 4, 1_200, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.STALE_READ);
        assertThat(result.violations().get(0).ops()).containsExactly(2_000_001L, 3_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("read 2000001 (client 2, r1, read token 3)", "op 3000001", "2795 ms before");
    }

    @Test
    void theSameReadDiscardedByItsClientIsNotJudged() {
        // given: the fenced reader's look at the stored token (4, above its read token 3) made it discard the read
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.FAIL, 4_000, -1);
        write(3_000_001, 3, 4, 1_200, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(result.violations()).isEmpty();
        assertThat(result.failed()).isEqualTo(1);
    }

    @Test
    void aWriteAcknowledgedWithinTheClockUncertaintyOfTheReadIsNotFlagged() {
        // given: the write's acknowledgement (1 205) and the read's return (1 208) are 3 ms apart, within 5 ms
        write(1_000_001, 1, 2, 1_000, Type.OK);
        write(3_000_001, 3, 4, 1_200, Type.OK);
        read(2_000_001, 2, 5, 1_100, Outcome.OK, 1_208, 1);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(result.violations()).isEmpty();
    }

    @Test
    void aReadThatMissedAWriteAcknowledgedBeforeItBeganIsAStaleReadToo() {
        // given: the read saw no id although client 1's write was acknowledged 95 ms before it began
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.OK, 1_150, 0);

        // when
        CheckResult result = check(List.of(1_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.STALE_READ);
    }

    @Test
    void aReadThatSawMoreIdsThanTheListHoldsSawAWriteThatWasLost() {
        // given: client 2 saw two ids, but the list the run left holds one: the second write, indeterminate (so
        // its absence alone is no violation), had landed and was lost after the read saw it
        write(1_000_001, 1, 2, 1_000, Type.OK);
        write(3_000_001, 3, 4, 1_050, Type.INFO);
        read(2_000_001, 2, 5, 1_100, Outcome.OK, 1_150, 2);

        // when
        CheckResult result = check(List.of(1_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.UNEXPLAINED_READ);
        assertThat(result.violations().get(0).ops()).containsExactly(2_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("read 2000001 (client 2, r1, read token 5)", "saw 2 ids", "holds 1");
    }

    @Test
    void aReadThatSawAnIdWrittenOnlyAfterItReturnedSawAWriteThatWasLost() {
        // given: client 2 returned at 1 150 having seen two ids, but only client 1's write had been invoked by
        // then; the second id of the final list is client 3's, invoked at 1 200: what the read saw second was lost
        // and client 3's write took its place, so the list's length alone hides it
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.OK, 1_150, 2);
        write(3_000_001, 3, 4, 1_200, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.UNEXPLAINED_READ);
        assertThat(result.violations().get(0).ops()).containsExactly(2_000_001L, 3_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("read 2000001 (client 2, r1, read token 3)", "op 3000001", "invoked at 1200", "50 ms after");
    }

    @Test
    void aReadThatSawFewerIdsThanAReadReturnedBeforeItBeganIsAStaleRead() {
        // given: client 2's read, returned at 1 150, saw two ids; client 4's, invoked at 1 200, saw one. The list
        // only grows, so the id client 2 saw second was lost in between (client 1's indeterminate write under token
        // 3), and client 3's indeterminate write, invoked before client 2's read returned, took its place: no
        // acknowledged write was missed and the list is as long as client 2 saw
        write(1_000_001, 1, 2, 1_000, Type.OK);
        write(1_000_002, 1, 3, 1_010, Type.INFO);
        write(3_000_001, 3, 7, 1_020, Type.INFO);
        read(2_000_001, 2, 5, 1_100, Outcome.OK, 1_150, 2);
        read(4_000_001, 4, 6, 1_200, Outcome.OK, 1_250, 1);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.STALE_READ);
        assertThat(result.violations().get(0).ops()).containsExactly(4_000_001L, 2_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("read 4000001 (client 4, r1, read token 6)", "read 2000001", "50 ms before");
    }

    @Test
    void aWriteInTheListUnderAReadGrantsTokenIsFlaggedWhetherOrNotItWasAcknowledged() {
        // given: client 2, holding read token 3, wrote under it (acknowledged), and client 4 under it too
        // (indeterminate, but it landed)
        write(1_000_001, 1, 2, 1_000, Type.OK);
        read(2_000_001, 2, 3, 1_100, Outcome.OK, 1_150, 1);
        write(2_000_002, 2, 3, 1_160, Type.OK);
        entries.add(new HistoryEntry(
                Type.INVOKE, Function.APPEND, 4_000_001, 4, "r1", 3, 1_170, "plain", null, null, null, null));
        write(3_000_001, 3, 4, 1_200, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_001L, 2_000_002L, 3_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.READ_TOKEN_WRITE);
        assertThat(result.violations().get(0).ops()).containsExactly(2_000_002L, 2_000_001L);

        // and an indeterminate write under a read token that landed is flagged as well
        CheckResult landed = check(List.of(1_000_001L, 4_000_001L, 3_000_001L));
        assertThat(kinds(landed))
                .containsExactlyInAnyOrder(ViolationKind.READ_TOKEN_WRITE, ViolationKind.LOST_ACKNOWLEDGED);
    }

    @Test
    void aWriteRefusedUnderAReadTokenIsNoViolation() {
        // given: client 2's write under its read token 3 was refused (stored token 4)
        write(1_000_001, 1, 2, 1_000, Type.OK);
        write(3_000_001, 3, 4, 1_050, Type.OK);
        read(2_000_001, 2, 3, 1_010, Outcome.FAIL, 1_100, -1);
        write(2_000_002, 2, 3, 1_110, Type.FAIL);

        // when
        CheckResult result = check(List.of(1_000_001L, 3_000_001L));

        // then
        assertThat(result.violations()).isEmpty();
    }

    @Test
    void theListIsCheckedAsEveryWriteGrantWritesOnce() {
        // given: a paused writer's late write under token 2 landed after the write under token 4
        write(3_000_001, 3, 4, 1_200, Type.OK);
        write(1_000_001, 1, 2, 1_000, Type.OK);

        // when
        CheckResult result = check(List.of(3_000_001L, 1_000_001L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.TOKEN_ORDER);
    }

    @Test
    void readsAreReadFromTheHistoryFilesAndPairedWithTheirCompletions(@TempDir Path directory) throws IOException {
        // given
        Files.writeString(directory.resolve("client-2.jsonl"), """
                {"type":"invoke","f":"read","op":2000001,"client":2,"resource":"r1","token":3,"time":1100}
                {"type":"ok","f":"read","op":2000001,"client":2,"resource":"r1","token":3,"time":1150,"seen":1}
                {"type":"invoke","f":"read","op":2000002,"client":2,"resource":"r1","token":5,"time":1300}
                {"type":"fail","f":"read","op":2000002,"client":2,"resource":"r1","token":5,"time":1350,"error":"stale"}
                {"type":"invoke","f":"read","op":2000003,"client":2,"resource":"r1","token":7,"time":1400}
                """);

        // when
        History history = History.read(directory);

        // then
        assertThat(history.reads())
                .containsExactly(
                        new Read(2_000_001, 2, "r1", 3, 1_100, Outcome.OK, 1_150, 1, null),
                        new Read(2_000_002, 2, "r1", 5, 1_300, Outcome.FAIL, 1_350, -1, "stale"),
                        new Read(2_000_003, 2, "r1", 7, 1_400, Outcome.INFO, -1, -1, "no completion recorded"));
        assertThat(history.size()).isZero();
    }

    @Test
    void anOkReadThatDoesNotSayWhatItSawMakesTheHistoryUnusable(@TempDir Path directory) throws IOException {
        // given
        Files.writeString(directory.resolve("client-2.jsonl"), """
                {"type":"invoke","f":"read","op":2000001,"client":2,"resource":"r1","token":3,"time":1100}
                {"type":"ok","f":"read","op":2000001,"client":2,"resource":"r1","token":3,"time":1150}
                {"type":"invoke","f":"read","op":2000002,"client":2,"resource":"r1","token":5,"time":1300}
                """);

        // when, then
        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("line 2")
                .hasMessageContaining("seen");
    }
}
