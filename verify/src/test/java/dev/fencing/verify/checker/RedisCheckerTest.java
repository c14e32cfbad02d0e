package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.verify.checker.HistoryEntry.Function;
import dev.fencing.verify.checker.HistoryEntry.Type;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Hand-made Redis histories and final states, each breaking one property the Redis checker must flag. */
class RedisCheckerTest {
    private final List<HistoryEntry> entries = new ArrayList<>();
    private final Map<Long, HistoryEntry> invokes = new HashMap<>();
    private long time = 1_000;

    /** Op {@code op} sent for r1 under {@code token}, by a script write (value and log) or a value-only set. */
    private void invoke(long op, long token, boolean script) {
        HistoryEntry entry = new HistoryEntry(
                Type.INVOKE,
                Function.APPEND,
                op,
                (int) (op / 100),
                "r1",
                token,
                time++,
                script ? "script" : "set",
                null,
                null,
                null,
                null);
        invokes.put(op, entry);
        entries.add(entry);
    }

    private void complete(long op, Type outcome) {
        HistoryEntry invoke = invokes.get(op);
        String error = outcome == Type.FAIL ? "rejected: stored token 9" : outcome == Type.INFO ? "timeout" : null;
        entries.add(new HistoryEntry(
                outcome,
                Function.APPEND,
                op,
                invoke.client(),
                "r1",
                invoke.token(),
                time++,
                null,
                null,
                null,
                null,
                error));
    }

    /** An operation invoked and completed before the next one is invoked. */
    private void write(long op, long token, boolean script, Type outcome) {
        invoke(op, token, script);
        complete(op, outcome);
    }

    private CheckResult check(List<Long> log, String value, Long token) {
        return RedisChecker.check(
                History.of(entries),
                new RedisState(
                        log == null ? Map.of() : Map.of("r1", log),
                        value == null ? Map.of() : Map.of("r1", value),
                        token == null ? Map.of() : Map.of("r1", token)));
    }

    private static List<ViolationKind> kinds(CheckResult result) {
        return result.violations().stream().map(Violation::kind).toList();
    }

    @Test
    void aRunWhereEveryPropertyHoldsHasNoViolations() {
        // given: a script write (token 5) and a set (token 6) acknowledged; a script write refused (token 4); a set
        // (token 7) indeterminate that landed, and a script write (token 8) indeterminate that did not
        write(101, 5, true, Type.OK);
        write(201, 6, false, Type.OK);
        write(301, 4, true, Type.FAIL);
        write(102, 7, false, Type.INFO);
        invoke(202, 8, true); // no completion recorded

        // when
        CheckResult result = check(List.of(101L), "102", 7L);

        // then
        assertThat(result.violations()).isEmpty();
        assertThat(result.operations()).isEqualTo(5);
        assertThat(result.ok()).isEqualTo(2);
        assertThat(result.failed()).isEqualTo(1);
        assertThat(result.indeterminate()).isEqualTo(2);
        assertThat(result.lostAcknowledged()).isZero();
    }

    @Test
    void aStaleScriptWriteAppendedAfterANewerOneIsATokenOrderViolationOnly() {
        // given: the token-5 holder paused, the token-6 holder wrote, then the stale write landed after it
        write(201, 6, true, Type.OK);
        write(101, 5, true, Type.OK);

        // when
        CheckResult result = check(List.of(201L, 101L), "101", null);

        // then: the log shows it; the real-time check does not report the same write again
        assertThat(kinds(result)).containsExactlyInAnyOrder(ViolationKind.TOKEN_ORDER, ViolationKind.FINAL_VALUE);
        assertThat(result.violations().get(0).detail())
                .contains("op 101 (client 1, r1, token 5)")
                .contains("comes after op 201 (client 2, r1, token 6)");
    }

    @Test
    void aStaleSetSentAfterANewerOneWasAcknowledgedIsAStaleWrite() {
        // given: value-only writes, which leave no log: only real time shows the order
        write(201, 6, false, Type.OK);
        write(101, 5, false, Type.OK);
        write(202, 7, false, Type.OK); // a newer write hides the stale one from the final value

        // when
        CheckResult result = check(null, "202", null);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.STALE_WRITE);
        assertThat(result.violations().get(0).ops()).containsExactly(101L, 201L);
    }

    @Test
    void twoAcknowledgedWritesUnderOneTokenAreAStaleWriteEvenWhenRealTimeOrdersNeitherFirst() {
        // given: each grant writes once and the fence is STRICT, so of two writes under token 6 (two clients given
        // one grant) the one Redis applied second was accepted under the token it found stored; sent concurrently,
        // real time orders neither first, and value-only writes leave no log
        invoke(101, 6, false);
        invoke(201, 6, false);
        complete(101, Type.OK);
        complete(201, Type.OK);
        write(202, 7, false, Type.OK); // a newer write hides both from the final value

        // when
        CheckResult result = check(null, "202", null);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.STALE_WRITE);
        assertThat(result.violations().get(0).ops()).containsExactlyInAnyOrder(101L, 201L);
    }

    @Test
    void twoScriptWritesUnderOneTokenAreReportedOnceByTheLog() {
        invoke(101, 6, true);
        invoke(201, 6, true);
        complete(101, Type.OK);
        complete(201, Type.OK);

        assertThat(kinds(check(List.of(101L, 201L), "201", null)))
                .containsOnlyOnce(ViolationKind.TOKEN_ORDER)
                .doesNotContain(ViolationKind.STALE_WRITE);
    }

    @Test
    void concurrentWritesMayCompleteInAnyOrderButTheValueMustBeTheHighestTokens() {
        // given: both sent before either was acknowledged, so real time orders neither first
        invoke(201, 6, false);
        invoke(101, 5, false);
        complete(201, Type.OK);
        complete(101, Type.OK);

        // then: the lower token's value left last is wrong; the higher token's is right
        assertThat(kinds(check(null, "101", null))).containsExactly(ViolationKind.FINAL_VALUE);
        assertThat(check(null, "201", null).violations()).isEmpty();
    }

    @Test
    void anAcknowledgedWriteMissingFromTheLogOrTheValueIsLost() {
        // given
        write(101, 5, true, Type.OK);

        // when
        CheckResult missingFromLog = check(List.of(), "101", 5L);
        CheckResult noValue = check(List.of(101L), null, null);

        // then
        assertThat(kinds(missingFromLog)).containsExactly(ViolationKind.LOST_ACKNOWLEDGED);
        assertThat(kinds(noValue)).containsExactly(ViolationKind.LOST_ACKNOWLEDGED);
        assertThat(noValue.lostAcknowledged()).isEqualTo(1);
    }

    @Test
    void noValueAfterAnIndeterminateScriptWriteThatIsInTheLogIsNotTheFinalValue() {
        // given: no write acknowledged, but the log shows that the token-5 script write landed, and that script sets
        // the value in the same step
        write(101, 5, true, Type.INFO);

        // when
        CheckResult noValue = check(List.of(101L), null, null);
        CheckResult notLanded = check(List.of(), null, null);

        // then: a value lost after it was written, not a write that never was
        assertThat(kinds(noValue)).containsExactly(ViolationKind.FINAL_VALUE);
        assertThat(noValue.violations().get(0).ops()).containsExactly(101L);
        assertThat(noValue.lostAcknowledged()).isZero();
        assertThat(kinds(notLanded)).isEmpty();
    }

    @Test
    void aStoredTokenThatIsNotTheValueWritersIsFlagged() {
        // given
        write(101, 5, false, Type.OK);

        // then
        assertThat(kinds(check(null, "101", 9L))).containsExactly(ViolationKind.STORED_TOKEN);
        assertThat(kinds(check(null, null, 9L)))
                .containsExactlyInAnyOrder(ViolationKind.STORED_TOKEN, ViolationKind.LOST_ACKNOWLEDGED);
    }

    @Test
    void aValueOrLogEntryNoWriteCouldHaveLeftIsFlagged() {
        // given
        write(101, 5, true, Type.OK);
        write(201, 6, true, Type.FAIL);

        // then: a refused write's id, an id nobody invoked, text that is no id, and a log entry twice
        assertThat(kinds(check(List.of(101L), "201", null))).containsExactly(ViolationKind.REFUSED_PRESENT);
        assertThat(kinds(check(List.of(101L), "999", null))).containsExactly(ViolationKind.UNKNOWN_ID);
        assertThat(kinds(check(List.of(101L), "garbage", null))).containsExactly(ViolationKind.UNKNOWN_ID);
        assertThat(kinds(check(List.of(101L, 101L), "101", null))).containsExactly(ViolationKind.DUPLICATE);
        assertThat(kinds(check(List.of(101L, 201L), "101", null))).containsExactly(ViolationKind.REFUSED_PRESENT);
    }

    @Test
    void aValueLeftByALowerTokenAfterALoggedHigherOneLandedIsNotTheFinalValue() {
        // given: a set under token 5 acknowledged; a script write under token 7 whose client timed out, but which
        // landed (it is in the log). The value is still op 101's: the token-5 set landed after the token-7 write
        write(101, 5, false, Type.OK);
        write(201, 7, true, Type.INFO);

        // when
        CheckResult result = check(List.of(201L), "101", 5L);
        CheckResult clean = check(List.of(201L), "201", 7L);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.FINAL_VALUE);
        assertThat(clean.violations()).isEmpty();
    }

    @Test
    void aLogEntryOfAValueOnlyWriteIsUnexplained() {
        // given: a set writes the value only; the script writes are the only ones that append to the log
        write(101, 5, true, Type.OK);
        write(201, 6, false, Type.OK);

        // when: the set's id is in the log, after the script write's, and in token order
        CheckResult result = check(List.of(101L, 201L), "201", 6L);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.UNKNOWN_ID);
        assertThat(result.violations().get(0).detail())
                .contains("id 201 at position 2 of the log of r1")
                .contains("path 'set'");
    }

    @Test
    void aValueLeftByAnIndeterminateScriptWriteMissingFromTheLogIsNotTheFinalValue() {
        // given: a script write sets the value and appends to the log in one step; op 202's client timed out
        write(101, 5, true, Type.OK);
        write(202, 8, true, Type.INFO);

        // when: the value is op 202's, but the log does not hold it
        CheckResult result = check(List.of(101L), "202", 8L);
        CheckResult clean = check(List.of(101L, 202L), "202", 8L);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.FINAL_VALUE);
        assertThat(result.violations().get(0).detail()).contains("op 202").contains("not in the log of r1");
        assertThat(clean.violations()).isEmpty();
    }

    @Test
    void aValueThatIsAnIdOnlyOnceTrimmedOrReparsedIsUnknown() {
        // given: the writes store an id as Long.toString writes it
        write(101, 5, true, Type.OK);

        // then: text no write stores is flagged, even where a lenient parse reads it as op 101's id
        for (String value : List.of(" 101", "101 ", "+101", "0101", "101\n")) {
            CheckResult result = check(List.of(101L), value, 5L);
            assertThat(kinds(result)).as("value '%s'", value).containsExactly(ViolationKind.UNKNOWN_ID);
            assertThat(result.violations().get(0).detail()).contains("'" + value + "'");
        }
        assertThat(check(List.of(101L), "101", 5L).violations()).isEmpty();
    }
}
