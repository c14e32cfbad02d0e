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
 * Hand-made election histories: two participants of the election of r1, client 1 leading term 2 and then client 2
 * leading term 5, each breaking one property the election checker must flag, and a clean one it must pass.
 */
class ElectionCheckerTest {
    private static final Duration UNCERTAINTY = Duration.ofMillis(5);

    private final List<HistoryEntry> entries = new ArrayList<>();
    private final List<TermEvent> events = new ArrayList<>();

    private void grant(long op, int client, long token, long time) {
        events.add(new TermEvent(TermEvent.Kind.GRANT, op, client, "r1", token, time, true));
    }

    /** A validity reading at {@code time}, then the write {@code op}, invoked and completed just after it. */
    private void write(long op, int client, long token, long time, boolean valid, Type outcome) {
        events.add(new TermEvent(TermEvent.Kind.CHECK, op, client, "r1", token, time, valid));
        entries.add(new HistoryEntry(
                Type.INVOKE, Function.APPEND, op, client, "r1", token, time + 1, "update", null, null, null, null));
        entries.add(new HistoryEntry(
                outcome,
                Function.APPEND,
                op,
                client,
                "r1",
                token,
                time + 2,
                null,
                null,
                null,
                null,
                outcome == Type.FAIL ? "rejected: stored token 5" : null));
    }

    /**
     * Client 1 is granted term 2 at 1000 and writes three times (valid); client 2 is granted term 5 at 2000 and
     * writes twice; client 1, resumed, reads its term invalid at 2100 and its late write is refused.
     */
    private void twoTermsAndARefusedLateWrite() {
        grant(1_000_001, 1, 2, 1_000);
        write(1_000_002, 1, 2, 1_010, true, Type.OK);
        write(1_000_003, 1, 2, 1_020, true, Type.OK);
        write(1_000_004, 1, 2, 1_030, true, Type.OK);
        grant(2_000_001, 2, 5, 2_000);
        write(2_000_002, 2, 5, 2_010, true, Type.OK);
        write(2_000_003, 2, 5, 2_020, true, Type.OK);
        write(1_000_005, 1, 2, 2_100, false, Type.FAIL);
    }

    private CheckResult check(List<Long> list) {
        return ElectionChecker.check(History.of(entries, events), Map.of("r1", list), UNCERTAINTY);
    }

    private static List<ViolationKind> kinds(CheckResult result) {
        return result.violations().stream().map(Violation::kind).toList();
    }

    @Test
    void termsThatFollowOneAnotherWithManyWritesEachAndARefusedLateWriteHaveNoViolations() {
        // given
        twoTermsAndARefusedLateWrite();

        // when
        CheckResult result = check(List.of(1_000_002L, 1_000_003L, 1_000_004L, 2_000_002L, 2_000_003L));

        // then
        assertThat(result.violations()).isEmpty();
        assertThat(result.operations()).isEqualTo(6);
        assertThat(result.ok()).isEqualTo(5);
        assertThat(result.failed()).isEqualTo(1);
    }

    @Test
    void aWriteUnderAnOlderTermLandingAfterANewerTermsWriteIsAFenceViolationWhileTheFencedRunRefusedIt() {
        // given: the fenced run refused the late write of term 2; the control run's landed after term 5's writes
        twoTermsAndARefusedLateWrite();
        CheckResult refused = check(List.of(1_000_002L, 1_000_003L, 1_000_004L, 2_000_002L, 2_000_003L));
        entries.remove(entries.size() - 1);
        entries.add(
                new HistoryEntry(Type.OK, Function.APPEND, 1_000_005, 1, "r1", 2, 2_102, null, null, null, null, null));

        // when
        CheckResult landed = check(List.of(1_000_002L, 1_000_003L, 1_000_004L, 2_000_002L, 2_000_003L, 1_000_005L));

        // then: named after the first write of the greater term
        assertThat(refused.violations()).isEmpty();
        assertThat(kinds(landed)).containsExactly(ViolationKind.TOKEN_ORDER);
        assertThat(landed.violations().get(0).ops()).containsExactly(1_000_005L, 2_000_002L);
    }

    @Test
    void anAcknowledgedWriteMissingFromTheListIsLost() {
        twoTermsAndARefusedLateWrite();

        CheckResult result = check(List.of(1_000_002L, 1_000_003L, 1_000_004L, 2_000_002L));

        assertThat(kinds(result)).containsExactly(ViolationKind.LOST_ACKNOWLEDGED);
        assertThat(result.lostAcknowledged()).isEqualTo(1);
    }

    @Test
    void aTermReadValidAfterTheNextTermWasGrantedBreaksTheLocalContractEvenWhenTheFenceRefusedTheWrite() {
        // given: client 1's late reading at 2100 answered valid although client 2 had term 5 since 2000
        grant(1_000_001, 1, 2, 1_000);
        write(1_000_002, 1, 2, 1_010, true, Type.OK);
        grant(2_000_001, 2, 5, 2_000);
        write(2_000_002, 2, 5, 2_010, true, Type.OK);
        write(1_000_003, 1, 2, 2_100, true, Type.FAIL);
        write(1_000_004, 1, 2, 2_130, true, Type.FAIL);

        // when
        CheckResult result = check(List.of(1_000_002L, 2_000_002L));

        // then: one violation for the term, at its first late reading, apart from the fence's kinds
        assertThat(kinds(result)).containsExactly(ViolationKind.LOCAL_VALIDITY);
        assertThat(result.violations().get(0).ops()).containsExactly(1_000_003L, 2_000_001L);
        assertThat(result.violations().get(0).detail()).contains("100 ms after client 2's term 5 of r1");
    }

    @Test
    void aValidReadingWithinTheClocksUncertaintyOfTheNextGrantIsNotFlagged() {
        grant(1_000_001, 1, 2, 1_000);
        grant(2_000_001, 2, 5, 2_000);
        write(1_000_002, 1, 2, 2_005, true, Type.FAIL);
        write(2_000_002, 2, 5, 2_010, true, Type.OK);

        assertThat(check(List.of(2_000_002L)).violations()).isEmpty();
    }

    @Test
    void aValidReadingAfterAGrantOfALowerTermOrOfItsOwnIsNotFlagged() {
        // given: client 2's term 5 reads valid long after term 2 was granted; client 1 is granted term 7 and
        // reads valid after it
        grant(1_000_001, 1, 2, 1_000);
        grant(2_000_001, 2, 5, 2_000);
        write(2_000_002, 2, 5, 3_000, true, Type.OK);
        grant(1_000_002, 1, 7, 4_000);
        write(1_000_003, 1, 7, 4_100, true, Type.OK);

        assertThat(check(List.of(2_000_002L, 1_000_003L)).violations()).isEmpty();
    }

    @Test
    void readsGrantsAndChecksFromTheHistoryFilesBesideTheWrites(@TempDir Path directory) throws IOException {
        // given
        Files.writeString(directory.resolve("client-1.jsonl"), """
                {"type":"ok","f":"grant","op":1000001,"client":1,"resource":"r1","token":2,"time":1000}
                {"type":"ok","f":"check","op":1000002,"client":1,"resource":"r1","token":2,"time":2100,"valid":true}
                {"type":"invoke","f":"append","op":1000002,"client":1,"resource":"r1","token":2,"time":2101,"path":"update"}
                {"type":"fail","f":"append","op":1000002,"client":1,"resource":"r1","token":2,"time":2102,"error":"stale"}
                """);
        Files.writeString(directory.resolve("client-2.jsonl"), """
                {"type":"ok","f":"grant","op":2000001,"client":2,"resource":"r1","token":5,"time":2000}
                """);

        // when
        History history = History.read(directory);

        // then
        assertThat(history.termEvents()).hasSize(3);
        assertThat(history.size()).isEqualTo(1);
        assertThat(kinds(ElectionChecker.check(history, Map.of(), UNCERTAINTY)))
                .containsExactly(ViolationKind.LOCAL_VALIDITY);
    }

    @Test
    void aCheckThatDoesNotSayWhatItAnsweredMakesTheHistoryUnusable(@TempDir Path directory) throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), """
                {"type":"ok","f":"check","op":1000002,"client":1,"resource":"r1","token":2,"time":2100}
                {"type":"ok","f":"grant","op":1000003,"client":1,"resource":"r1","token":2,"time":2200}
                """);

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("line 1")
                .hasMessageContaining("\"valid\"");
    }

    @Test
    void aCheckOfATermItsParticipantWasNeverGrantedLostItsGrantLineAndMakesTheHistoryUnusable(@TempDir Path directory)
            throws IOException {
        // given: client 2 reads term 9 valid and writes under it, but its file has no grant of term 9; with the grant
        // line (at 2000) client 1's valid reading of term 7 at 2100 breaks the local contract, without it nothing does
        Files.writeString(directory.resolve("client-1.jsonl"), """
                {"type":"ok","f":"grant","op":1000001,"client":1,"resource":"r1","token":7,"time":1000}
                {"type":"ok","f":"check","op":1000002,"client":1,"resource":"r1","token":7,"time":2100,"valid":true}
                {"type":"invoke","f":"append","op":1000002,"client":1,"resource":"r1","token":7,"time":2101,"path":"update"}
                {"type":"fail","f":"append","op":1000002,"client":1,"resource":"r1","token":7,"time":2102,"error":"stale"}
                """);
        String granted = """
                {"type":"ok","f":"grant","op":2000001,"client":2,"resource":"r1","token":9,"time":2000}
                """;
        String writes = """
                {"type":"ok","f":"check","op":2000002,"client":2,"resource":"r1","token":9,"time":2010,"valid":true}
                {"type":"invoke","f":"append","op":2000002,"client":2,"resource":"r1","token":9,"time":2011,"path":"update"}
                {"type":"ok","f":"append","op":2000002,"client":2,"resource":"r1","token":9,"time":2012}
                """;
        Files.writeString(directory.resolve("client-2.jsonl"), granted + writes);
        assertThat(kinds(
                        ElectionChecker.check(History.read(directory), Map.of("r1", List.of(2_000_002L)), UNCERTAINTY)))
                .containsExactly(ViolationKind.LOCAL_VALIDITY);

        // when the grant line is missing
        Files.writeString(directory.resolve("client-2.jsonl"), writes);

        // then
        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 1")
                .hasMessageContaining("term 9 of r1")
                .hasMessageContaining("no grant");
    }

    @Test
    void twoParticipantsWritingUnderOneTermsTokenAreTwoLeadersAtOnce() {
        // given: clients 1 and 2 are both told they lead under token 5 (a token source that handed one term out
        // twice) and interleave their writes; a MONOTONIC fence accepts every one of them, and the list's tokens
        // never decrease
        grant(1_000_001, 1, 5, 1_000);
        grant(2_000_001, 2, 5, 1_001);
        write(1_000_002, 1, 5, 1_010, true, Type.OK);
        write(2_000_002, 2, 5, 1_020, true, Type.OK);
        write(1_000_003, 1, 5, 1_030, true, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_002L, 2_000_002L, 1_000_003L));

        // then
        assertThat(kinds(result)).contains(ViolationKind.TOKEN_ORDER);
    }

    @Test
    void aTermReadValidAfterItsOwnParticipantWasGrantedTheNextTermBreaksTheLocalContract() {
        // given: client 1 leads term 2; its session is lost, it joins again and is granted term 5 at 2000, while
        // a thread of it that still holds term 2 reads that term valid at 2100: term 2 ended when term 5 began,
        // whoever was granted term 5
        grant(1_000_001, 1, 2, 1_000);
        write(1_000_002, 1, 2, 1_010, true, Type.OK);
        grant(1_000_003, 1, 5, 2_000);
        write(1_000_004, 1, 5, 2_010, true, Type.OK);
        write(1_000_005, 1, 2, 2_100, true, Type.FAIL);

        // when
        CheckResult result = check(List.of(1_000_002L, 1_000_004L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.LOCAL_VALIDITY);
        assertThat(result.violations().get(0).ops()).containsExactly(1_000_005L, 1_000_003L);
        assertThat(result.violations().get(0).detail()).contains("100 ms after client 1's term 5 of r1");
    }

    @Test
    void oneTermGrantedToTwoParticipantsIsTwoLeadersOfOneTermEvenWhenNoReadingComesLateEnoughToShowIt() {
        // given: a token source hands term 5 to client 1 at 1000 and to client 2 at 1003; each reads it valid
        // within the clocks' uncertainty of the other's grant and writes once, and only client 2's write lands
        // (client 1's is indeterminate): the list is clean and no reading is late enough to be flagged
        grant(1_000_001, 1, 5, 1_000);
        grant(2_000_001, 2, 5, 1_003);
        write(1_000_002, 1, 5, 1_004, true, Type.INFO);
        write(2_000_002, 2, 5, 1_005, true, Type.OK);

        // when
        CheckResult result = check(List.of(2_000_002L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.TERM_GRANTED_TWICE);
        assertThat(result.violations().get(0).ops()).containsExactly(1_000_001L, 2_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("term 5 of r1", "client 1 at 1000", "client 2 at 1003");
    }

    @Test
    void aTermReadValidAfterItsTokenWasGrantedToAnotherParticipantIsTwoLeadersAtOnceEvenWhenOnlyOneWrites() {
        // given: a token source hands term 5 out twice: to client 1 at 1000 and to client 2 at 2000. Client 2 never
        // writes; client 1 reads its term valid at 2100 and writes: its list is clean, and the readings show that
        // two participants led under one term, as the grants alone do
        grant(1_000_001, 1, 5, 1_000);
        write(1_000_002, 1, 5, 1_010, true, Type.OK);
        grant(2_000_001, 2, 5, 2_000);
        write(1_000_003, 1, 5, 2_100, true, Type.OK);

        // when
        CheckResult result = check(List.of(1_000_002L, 1_000_003L));

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.LOCAL_VALIDITY, ViolationKind.TERM_GRANTED_TWICE);
        assertThat(result.violations().get(0).ops()).containsExactly(1_000_003L, 2_000_001L);
    }

    /**
     * A lower term granted after a greater one is not reported from the grants (a grant's time bounds it from above
     * only), but what its participant does with it is: a valid reading is LOCAL_VALIDITY, a landed write TOKEN_ORDER.
     */
    @Test
    void aFirstTermGrantedAfterAGreaterOneIsCaughtByWhatItsParticipantDoesNotByItsGrant() {
        // given: client 1 has term 7 since 1000; client 2 records a grant of term 5 at 2000, its first
        grant(1_000_001, 1, 7, 1_000);
        write(1_000_002, 1, 7, 1_010, true, Type.OK);
        grant(2_000_001, 2, 5, 2_000);

        // then: the grants alone pass (client 2 may have joined and been granted term 5 before 1000, and paused;
        // no line of its own bounds when it joined)
        assertThat(check(List.of(1_000_002L)).violations()).isEmpty();

        // when: client 2 reads its term valid and its write lands after term 7's
        write(2_000_002, 2, 5, 2_010, true, Type.OK);
        CheckResult result = check(List.of(1_000_002L, 2_000_002L));

        // then
        assertThat(kinds(result)).containsExactlyInAnyOrder(ViolationKind.LOCAL_VALIDITY, ViolationKind.TOKEN_ORDER);
    }

    /**
     * Client 1's file: term 7 granted at 1000, one write. Client 2's file: term 3 granted at 500, a write at 510, a
     * last reading (invalid) and refused write ending at {@code lastLine}, then a grant of term 5 at 2000.
     */
    private static void clientTwoJoinsAgainAfter(Path directory, long lastLine) throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), """
                {"type":"ok","f":"grant","op":1000001,"client":1,"resource":"r1","token":7,"time":1000}
                {"type":"ok","f":"check","op":1000002,"client":1,"resource":"r1","token":7,"time":1010,"valid":true}
                {"type":"invoke","f":"append","op":1000002,"client":1,"resource":"r1","token":7,"time":1011,"path":"update"}
                {"type":"ok","f":"append","op":1000002,"client":1,"resource":"r1","token":7,"time":1012}
                """);
        Files.writeString(directory.resolve("client-2.jsonl"), """
                {"type":"ok","f":"grant","op":2000001,"client":2,"resource":"r1","token":3,"time":500}
                {"type":"ok","f":"check","op":2000002,"client":2,"resource":"r1","token":3,"time":510,"valid":true}
                {"type":"invoke","f":"append","op":2000002,"client":2,"resource":"r1","token":3,"time":511,"path":"update"}
                {"type":"ok","f":"append","op":2000002,"client":2,"resource":"r1","token":3,"time":512}
                {"type":"ok","f":"check","op":2000003,"client":2,"resource":"r1","token":3,"time":%d,"valid":false}
                {"type":"invoke","f":"append","op":2000003,"client":2,"resource":"r1","token":3,"time":%d,"path":"update"}
                {"type":"fail","f":"append","op":2000003,"client":2,"resource":"r1","token":3,"time":%d,"error":"stale"}
                {"type":"ok","f":"grant","op":2000004,"client":2,"resource":"r1","token":5,"time":2000}
                """.formatted(lastLine - 2, lastLine - 1, lastLine));
    }

    @Test
    void aTermGrantedToAParticipantThatJoinedAgainAfterAGreaterTermsGrantWentBackwards(@TempDir Path directory)
            throws IOException {
        // given: client 2's last line of term 3 is at 1500, after term 7's grant at 1000; it joins again only after
        // that line, when term 7's claim already existed, so whatever it is granted next comes after term 7
        clientTwoJoinsAgainAfter(directory, 1_500);

        // when: it is granted term 5, below 7, and neither reads it valid nor writes under it
        CheckResult result = ElectionChecker.check(
                History.read(directory), Map.of("r1", List.of(2_000_002L, 1_000_002L)), UNCERTAINTY);

        // then
        assertThat(kinds(result)).containsExactly(ViolationKind.TERM_ORDER);
        assertThat(result.violations().get(0).ops()).containsExactly(2_000_004L, 1_000_001L);
        assertThat(result.violations().get(0).detail())
                .contains("client 2's term 5 of r1")
                .contains("1500")
                .contains("client 1's term 7 of r1 was granted at 1000");
    }

    @Test
    void aLateGrantLogOfAParticipantWhoseLastLineWasNotAfterTheGreaterGrantPasses(@TempDir Path directory)
            throws IOException {
        // given: client 2's last line of term 3 is before term 7's grant (it may have joined again at once, been
        // granted term 5 before client 1 joined, and paused before recording it), or within the clocks'
        // uncertainty after it
        for (long lastLine : List.of(900L, 1_005L)) {
            clientTwoJoinsAgainAfter(directory, lastLine);

            // when
            CheckResult result = ElectionChecker.check(
                    History.read(directory), Map.of("r1", List.of(2_000_002L, 1_000_002L)), UNCERTAINTY);

            // then
            assertThat(result.violations()).as("last line at %d", lastLine).isEmpty();
        }
        // and one past the uncertainty is flagged: the two above pass because of where their last line is
        clientTwoJoinsAgainAfter(directory, 1_006);
        assertThat(kinds(ElectionChecker.check(
                        History.read(directory), Map.of("r1", List.of(2_000_002L, 1_000_002L)), UNCERTAINTY)))
                .containsExactly(ViolationKind.TERM_ORDER);
    }
}
