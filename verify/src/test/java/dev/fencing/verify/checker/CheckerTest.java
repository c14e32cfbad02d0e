package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.fencing.verify.checker.HistoryEntry.Function;
import dev.fencing.verify.checker.HistoryEntry.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Hand-made histories and database contents, each breaking one property the checker must flag. */
class CheckerTest {
    private final List<HistoryEntry> entries = new ArrayList<>();
    private long time = 1_000;

    /** An append under {@code token} that completes with {@code outcome} (null: no completion recorded). */
    private void append(long op, int client, String resource, long token, Type outcome) {
        entries.add(entry(Type.INVOKE, Function.APPEND, op, client, resource, token, null, null, null));
        if (outcome != null) {
            entries.add(entry(outcome, Function.APPEND, op, client, resource, token, null, null, null));
        }
    }

    /** The publish of an acknowledged append, acknowledged by Kafka at {@code offset} of partition 0. */
    private void published(long op, int client, String resource, long token, long offset, boolean stamped) {
        entries.add(entry(Type.INVOKE, Function.PUBLISH, op, client, resource, token, stamped, null, null));
        entries.add(entry(Type.OK, Function.PUBLISH, op, client, resource, token, null, 0, offset));
    }

    /** The publish of an acknowledged append that timed out: Kafka may have the record, at an offset nobody knows. */
    private void publishTimedOut(long op, int client, String resource, long token) {
        entries.add(entry(Type.INVOKE, Function.PUBLISH, op, client, resource, token, true, null, null));
        entries.add(entry(Type.INFO, Function.PUBLISH, op, client, resource, token, null, null, null));
    }

    private HistoryEntry entry(
            Type type,
            Function function,
            long op,
            int client,
            String resource,
            long token,
            Boolean stamped,
            Integer partition,
            Long offset) {
        String path = type == Type.INVOKE && function == Function.APPEND ? "update" : null;
        String error = type == Type.FAIL ? "rejected: stored token is newer" : type == Type.INFO ? "timeout" : null;
        return new HistoryEntry(
                type, function, op, client, resource, token, time++, path, stamped, partition, offset, error);
    }

    private CheckResult check(Map<String, List<Long>> lists, Map<String, List<Long>> applied, List<DeadLetter> dead) {
        return Checker.check(History.of(entries), new Observed(lists, applied, dead), Checker.Options.DEFAULT);
    }

    private static List<ViolationKind> kinds(CheckResult result) {
        return result.violations().stream().map(Violation::kind).toList();
    }

    @Test
    void aRunWhereEveryPropertyHoldsHasNoViolations() {
        // given: op 1 (token 5) written and applied; op 2 (token 4) refused; op 3 (token 6) indeterminate and
        // absent; op 4 (token 7) written, its record stale behind op 5's (token 8) and dead-lettered; op 6's
        // record carried no token and was dead-lettered for it
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 4, Type.FAIL);
        append(3, 3, "r1", 6, Type.INFO);
        append(5, 2, "r1", 8, Type.OK);
        published(5, 2, "r1", 8, 1, true);
        append(4, 1, "r1", 7, Type.OK); // written before op 5 (its list position), published after
        published(4, 1, "r1", 7, 2, true);
        append(6, 3, "r1", 9, Type.OK);
        published(6, 3, "r1", 9, 3, false);

        // when
        CheckResult result = check(
                Map.of("r1", List.of(1L, 4L, 5L, 6L)),
                Map.of("r1", List.of(1L, 5L)),
                List.of(
                        new DeadLetter(4L, "r1", "STALE_TOKEN", "7 < 8", 0, 2),
                        new DeadLetter(6L, "r1", "MISSING_TOKEN", "no header", 0, 3)));

        // then
        assertThat(result.violations()).isEmpty();
        assertThat(result.operations()).isEqualTo(6);
        assertThat(result.ok()).isEqualTo(4);
        assertThat(result.failed()).isEqualTo(1);
        assertThat(result.indeterminate()).isEqualTo(1);
        assertThat(result.recordsProduced()).isEqualTo(4);
        assertThat(result.recordsApplied()).isEqualTo(2);
        assertThat(result.recordsDropped()).isEqualTo(1);
        assertThat(result.recordsDeadLettered()).isEqualTo(1);
    }

    @Test
    void anAcknowledgedAppendMissingFromTheListIsALostAcknowledgement() {
        append(1, 1, "r1", 5, Type.OK);
        append(2, 2, "r1", 6, Type.OK);

        CheckResult result = check(Map.of("r1", List.of(1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.LOST_ACKNOWLEDGED);
        assertThat(result.violations().get(0).ops()).containsExactly(2L);
        assertThat(result.violations().get(0).detail()).contains("op 2 (client 2, r1, token 6)");
        assertThat(result.lostAcknowledged()).isEqualTo(1);
    }

    @Test
    void anIndeterminateAppendMayBeMissingOrPresent() {
        append(1, 1, "r1", 5, Type.INFO);
        append(2, 2, "r1", 6, null); // its client was killed before it recorded a completion

        assertThat(check(Map.of("r1", List.of()), Map.of(), List.of()).violations())
                .isEmpty();
        CheckResult present = check(Map.of("r1", List.of(1L, 2L)), Map.of(), List.of());
        assertThat(present.violations()).isEmpty();
        assertThat(present.indeterminate()).isEqualTo(2);
    }

    @Test
    void anIdTwiceInAListIsADuplicate() {
        append(1, 1, "r1", 5, Type.OK);

        CheckResult result = check(Map.of("r1", List.of(1L, 1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.DUPLICATE);
        assertThat(result.violations().get(0).detail()).contains("positions 1 and 2");
        assertThat(result.duplicated()).isEqualTo(1);
    }

    @Test
    void aLowerTokenAfterAHigherOneIsAStaleWriteThatLanded() {
        // given: client 1 (token 5) paused after its lock; client 2 (token 6) wrote; client 1 resumed and wrote
        append(2, 2, "r1", 6, Type.OK);
        append(1, 1, "r1", 5, Type.OK);

        CheckResult result = check(Map.of("r1", List.of(2L, 1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.TOKEN_ORDER);
        assertThat(result.violations().get(0).ops()).containsExactly(1L, 2L);
        assertThat(result.violations().get(0).detail())
                .isEqualTo("in the list of r1, op 1 (client 1, r1, token 5) at position 2 comes after"
                        + " op 2 (client 2, r1, token 6) at position 1");
    }

    @Test
    void anEqualTokenTwiceInAListBreaksStrictOrderButNotMonotonicOrder() {
        append(1, 1, "r1", 5, Type.OK);
        append(2, 1, "r1", 5, Type.OK);
        History history = History.of(entries);
        Observed observed = new Observed(Map.of("r1", List.of(1L, 2L)), Map.of(), List.of());

        assertThat(kinds(Checker.check(history, observed, Checker.Options.DEFAULT)))
                .containsExactly(ViolationKind.TOKEN_ORDER);
        assertThat(Checker.check(history, observed, new Checker.Options(false, false))
                        .violations())
                .isEmpty();
    }

    @Test
    void equalTokensFromTwoClientsInAnAppliedListAreTwoHoldersOfOneGrantEvenWhenNotStrict() {
        // given: clients 1 and 2 both write and publish under token 5, one grant's; client 1 publishes twice
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 1, "r1", 5, Type.OK);
        published(2, 1, "r1", 5, 1, true);
        append(3, 2, "r1", 5, Type.INFO); // its write timed out and did not land; its record was published
        published(3, 2, "r1", 5, 2, true);
        History history = History.of(entries);
        Checker.Options monotonic = new Checker.Options(false, false);

        // when: the consumer (MONOTONIC) applies all three
        CheckResult result = Checker.check(
                history,
                new Observed(Map.of("r1", List.of(1L, 2L)), Map.of("r1", List.of(1L, 2L, 3L)), List.of()),
                monotonic);

        // then: client 1's second record passes, client 2's is flagged; so is its write, where it landed
        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_TOKEN_ORDER);
        assertThat(result.violations().get(0).ops()).containsExactly(3L, 1L);
        assertThat(result.violations().get(0).detail())
                .contains("op 3 (client 2, r1, token 5)")
                .contains("another client's");
        assertThat(kinds(Checker.check(
                        history,
                        new Observed(Map.of("r1", List.of(1L, 2L, 3L)), Map.of("r1", List.of(1L, 2L, 3L)), List.of()),
                        monotonic)))
                .containsExactly(ViolationKind.TOKEN_ORDER, ViolationKind.RECORD_TOKEN_ORDER);
    }

    @Test
    void anIdNoClientInvokedForThatResourceIsUnknown() {
        append(1, 1, "r2", 5, Type.OK);

        CheckResult result = check(Map.of("r1", List.of(1L, 99L), "r2", List.of(1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.UNKNOWN_ID, ViolationKind.UNKNOWN_ID);
        assertThat(result.violations().get(0).detail()).contains("was invoked for r2");
        assertThat(result.violations().get(1).detail()).contains("id 99").contains("was invoked by no client");
    }

    @Test
    void aRefusedAppendInTheListIsRefusedButPresent() {
        append(1, 1, "r1", 5, Type.FAIL);

        CheckResult result = check(Map.of("r1", List.of(1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.REFUSED_PRESENT);
        assertThat(result.violations().get(0).detail()).contains("was refused (rejected: stored token is newer)");
    }

    @Test
    void aRecordAppliedTwiceIsADuplicateAndAStaleRecordAppliedIsOutOfOrder() {
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 6, Type.OK);
        published(2, 2, "r1", 6, 1, true);
        append(3, 3, "r1", 4, Type.OK);
        published(3, 3, "r1", 4, 2, true);

        CheckResult result = check(Map.of("r1", List.of(1L, 2L, 3L)), Map.of("r1", List.of(1L, 2L, 1L)), List.of());

        assertThat(kinds(result))
                .containsExactly(ViolationKind.TOKEN_ORDER, ViolationKind.RECORD_DUPLICATE, ViolationKind.RECORD_LOST);
        CheckResult stale = check(Map.of("r1", List.of(1L, 2L)), Map.of("r1", List.of(2L, 3L, 1L)), List.of());
        assertThat(kinds(stale))
                .contains(ViolationKind.RECORD_TOKEN_ORDER)
                .doesNotContain(ViolationKind.RECORD_DUPLICATE, ViolationKind.RECORD_LOST);
    }

    @Test
    void anAcknowledgedRecordNeitherAppliedNorDeadLetteredIsLost() {
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);

        CheckResult result = check(Map.of("r1", List.of(1L)), Map.of(), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_LOST);
        assertThat(result.violations().get(0).detail()).contains("partition 0 offset 0");
        assertThat(result.lostAcknowledged()).isEqualTo(1);
    }

    @Test
    void aStaleDeadLetterWithoutANewerAppliedTokenBeforeItIsRefusedWrongly() {
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 6, Type.OK);
        published(2, 2, "r1", 6, 1, true);

        // op 1 dead-lettered as stale although only op 2, at a LATER offset, carries a newer token
        CheckResult result = check(
                Map.of("r1", List.of(1L, 2L)),
                Map.of("r1", List.of(2L)),
                List.of(new DeadLetter(1L, "r1", "STALE_TOKEN", null, 0, 0)));

        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_REFUSED_WRONGLY);
        assertThat(result.violations().get(0).detail()).contains("dead-lettered as stale");
    }

    @Test
    void aRecordWithoutATokenThatWasAppliedMeansTheConsumerFailedOpen() {
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, false);

        CheckResult result = check(Map.of("r1", List.of(1L)), Map.of("r1", List.of(1L)), List.of());

        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_UNSTAMPED_APPLIED);
    }

    @Test
    void anAppliedOrDeadLetteredIdThatNoClientPublishedIsUnknown() {
        append(1, 1, "r1", 5, Type.OK); // written, never published

        CheckResult result = check(
                Map.of("r1", List.of(1L)),
                Map.of("r1", List.of(1L)),
                List.of(new DeadLetter(null, "r1", "UNREADABLE_RECORD", null, 0, 7)));

        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_UNKNOWN_ID, ViolationKind.RECORD_UNKNOWN_ID);
    }

    @Test
    void aStaleRecordAppliedBeforeTheNewerRecordAheadOfItInTheLogIsAStaleRecordApplied() {
        // given: op 1 (token 8) published at offset 0; op 2 (token 3), a paused ex-holder's late record, at offset 1.
        // In log order op 2 is stale and must be dropped; a consumer that takes the key's records out of order
        // applies op 2 first, then op 1, so the applied list alone rises (3, 8) and looks clean
        append(1, 1, "r1", 8, Type.OK);
        published(1, 1, "r1", 8, 0, true);
        append(2, 2, "r1", 3, Type.OK);
        published(2, 2, "r1", 3, 1, true);

        // when
        CheckResult result = check(Map.of("r1", List.of(2L, 1L)), Map.of("r1", List.of(2L, 1L)), List.of());
        CheckResult inLogOrder = check(
                Map.of("r1", List.of(2L, 1L)),
                Map.of("r1", List.of(1L)),
                List.of(new DeadLetter(2L, "r1", "STALE_TOKEN", "3 < 8", 0, 1)));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_TOKEN_ORDER);
        assertThat(result.violations().get(0).ops()).containsExactly(2L, 1L);
        assertThat(inLogOrder.violations()).isEmpty();
    }

    @Test
    void aStampedRecordDeadLetteredForAnyReasonButAStaleTokenIsRefusedWrongly() {
        // given: two well-formed, stamped, fresh records; the consumer dead-letters them as if they had no key or
        // could not be read (or with no reason header at all): neither applied, neither lost in the checker's count
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 6, Type.OK);
        published(2, 2, "r1", 6, 1, true);
        append(3, 3, "r1", 7, Type.OK);
        published(3, 3, "r1", 7, 2, false);

        // when
        CheckResult result = check(
                Map.of("r1", List.of(1L, 2L, 3L)),
                Map.of(),
                List.of(
                        new DeadLetter(1L, "r1", "MISSING_KEY", null, 0, 0),
                        new DeadLetter(2L, "r1", "UNKNOWN", null, 0, 1),
                        new DeadLetter(3L, "r1", "UNREADABLE_RECORD", null, 0, 2)));

        // then: the unstamped record had to be dead-lettered, but for its missing token
        assertThat(kinds(result))
                .containsExactly(
                        ViolationKind.RECORD_REFUSED_WRONGLY,
                        ViolationKind.RECORD_REFUSED_WRONGLY,
                        ViolationKind.RECORD_REFUSED_WRONGLY);
    }

    @Test
    void aStaleDeadLetterIsJudgedAtTheOffsetItsRecordWasPublishedAtNotTheOriginItsDeadLetterClaims() {
        // given: op 1 (token 5) at offset 0, op 2 (token 6) at offset 1, applied. Op 1 came first in the log, so it
        // was fresh; its dead letter names offset 7 as its origin, behind op 2
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 6, Type.OK);
        published(2, 2, "r1", 6, 1, true);

        // when
        CheckResult result = check(
                Map.of("r1", List.of(1L, 2L)),
                Map.of("r1", List.of(2L)),
                List.of(new DeadLetter(1L, "r1", "STALE_TOKEN", "5 < 6", 0, 7)));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_REFUSED_WRONGLY);
    }

    @Test
    void aStaleRecordWhosePublishTimedOutAfterTheNewerOneWasAcknowledgedIsBehindItInTheLog() {
        // given: op 2 (token 3), a paused ex-holder's write, is sent to Kafka only after op 1's record (token 8) was
        // acknowledged at offset 0, so it lands behind it; its send times out (no offset known), yet Kafka has it.
        // A consumer that takes the key's records out of log order applies op 2 first, then op 1: the applied list
        // rises (3, 8), and the history knows no offset of op 2 to compare
        append(2, 2, "r1", 3, Type.OK);
        append(1, 1, "r1", 8, Type.OK);
        published(1, 1, "r1", 8, 0, true);
        publishTimedOut(2, 2, "r1", 3);

        // when
        CheckResult result = check(Map.of("r1", List.of(2L, 1L)), Map.of("r1", List.of(2L, 1L)), List.of());
        CheckResult inLogOrder = check(
                Map.of("r1", List.of(2L, 1L)),
                Map.of("r1", List.of(1L)),
                List.of(new DeadLetter(2L, "r1", "STALE_TOKEN", "3 < 8", 0, 1)));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_TOKEN_ORDER);
        assertThat(result.violations().get(0).ops()).containsExactly(2L, 1L);
        assertThat(inLogOrder.violations()).isEmpty();
    }

    @Test
    void aRecordWhosePublishTimedOutWhileANewerOneWasBeingSentMayBeAheadOfItInTheLog() {
        // given: op 2's send began before op 1's record was acknowledged: either may be first in the log
        append(2, 2, "r1", 3, Type.OK);
        append(1, 1, "r1", 8, Type.OK);
        entries.add(entry(Type.INVOKE, Function.PUBLISH, 2, 2, "r1", 3, true, null, null));
        published(1, 1, "r1", 8, 0, true);
        entries.add(entry(Type.INFO, Function.PUBLISH, 2, 2, "r1", 3, null, null, null));

        // then
        assertThat(check(Map.of("r1", List.of(2L, 1L)), Map.of("r1", List.of(2L, 1L)), List.of())
                        .violations())
                .isEmpty();
    }

    @Test
    void aFreshRecordDeadLetteredAsStaleOnlyForANewerOneSentAfterItWasAcknowledgedIsRefusedWrongly() {
        // given: op 1 (token 5) acknowledged at offset 0; op 2 (token 6) sent after that, its send timed out, and
        // applied. Op 2 lies behind op 1 in the log, so op 1 was fresh when the consumer reached it
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 2, "r1", 6, Type.OK);
        publishTimedOut(2, 2, "r1", 6);

        // when
        CheckResult result = check(
                Map.of("r1", List.of(1L, 2L)),
                Map.of("r1", List.of(2L)),
                List.of(new DeadLetter(1L, "r1", "STALE_TOKEN", "5 < 6", 0, 0)));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.RECORD_REFUSED_WRONGLY);
        assertThat(result.violations().get(0).ops()).containsExactly(1L);
    }

    @Test
    void aRecordWhosePublishWasRefusedIsUnknownWhenAppliedOrDeadLettered() {
        // given: op 1 (token 5) written and its record acknowledged; ops 2 and 3 written, their publishes refused
        // (definitely not sent), yet op 2's record was applied and op 3's dead-lettered: records nobody published
        append(1, 1, "r1", 5, Type.OK);
        published(1, 1, "r1", 5, 0, true);
        append(2, 1, "r1", 6, Type.OK);
        entries.add(entry(Type.INVOKE, Function.PUBLISH, 2, 1, "r1", 6, true, null, null));
        entries.add(entry(Type.FAIL, Function.PUBLISH, 2, 1, "r1", 6, null, null, null));
        append(3, 2, "r1", 7, Type.OK);
        entries.add(entry(Type.INVOKE, Function.PUBLISH, 3, 2, "r1", 7, false, null, null));
        entries.add(entry(Type.FAIL, Function.PUBLISH, 3, 2, "r1", 7, null, null, null));

        // when
        CheckResult result = check(
                Map.of("r1", List.of(1L, 2L, 3L)),
                Map.of("r1", List.of(1L, 2L)),
                List.of(new DeadLetter(3L, "r1", DeadLetter.MISSING_TOKEN, null, 0, 2)));

        // then
        assertThat(result.violations())
                .extracting(Violation::kind, Violation::ops)
                .containsExactlyInAnyOrder(
                        tuple(ViolationKind.RECORD_UNKNOWN_ID, List.of(2L)),
                        tuple(ViolationKind.RECORD_UNKNOWN_ID, List.of(3L)));
        assertThat(result.violations()).extracting(Violation::detail).allSatisfy(description -> assertThat(description)
                .contains("refused"));
    }
}
