package dev.fencing.verify.checker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks an election run's {@link History} against the lists its leaders left in the database, knowing nothing of
 * the code that produced either. The workload's contract: one election per resource; each participant that leads
 * records its term's grant ({@link TermEvent.Kind#GRANT}), and before each write under the term a reading of the
 * term's validity ({@link TermEvent.Kind#CHECK}), then the write as an {@code append} of its id to the resource's
 * list under the term's token. A term writes many times, so equal tokens may follow one another in a list. For
 * each resource:
 *
 * <ul>
 *   <li>the fence, from the list alone: no write under a term lands after a write under a greater term ({@link
 *       ViolationKind#TOKEN_ORDER}, non-decreasing tokens, and an equal token only from the participant whose term it
 *       is: two participants writing under one token are two leaders at once); only ids invoked for it ({@link
 *       ViolationKind#UNKNOWN_ID}), none twice ({@link ViolationKind#DUPLICATE}), every acknowledged write present
 *       ({@link ViolationKind#LOST_ACKNOWLEDGED}) and no refused one ({@link ViolationKind#REFUSED_PRESENT});
 *   <li>the local contract, from the term events alone: no reading of a term answers valid when it began after a
 *       greater term of the same election had been granted, to any participant, itself included, or its own term's token
 *       to another participant (one term handed out twice: two leaders at once, though perhaps only one writes) ({@link
 *       ViolationKind#LOCAL_VALIDITY}), reported once per term, at its first such reading;
 *   <li>the grants, from the term events alone: no term's token granted to two participants ({@link
 *       ViolationKind#TERM_GRANTED_TWICE}), reported once per term, whatever the two then read or wrote (their
 *       readings may all fall within the clocks' uncertainty of the other's grant, and only one of them may write);
 *   <li>the order of the grants, from the term events alone: no term granted to a participant that joined the election
 *       again after a term with a token at or above its own had been granted ({@link ViolationKind#TERM_ORDER}: the
 *       election's tokens went backwards), reported once per grant.
 * </ul>
 *
 * <p>A grant's time is read after its participant learned it leads, so it bounds the grant from above only: a
 * participant that paused there records a grant of term 8 long after another recorded term 10, and nothing went
 * backwards. What bounds a grant from below is its participant's line before it, once it has had a term: it joins
 * the election again only after its last term's last line, and a term's token is fixed when it joins (its claim is
 * made then), so a claim made after another's was granted must carry a greater token. A grant is reported when
 * that line is more than {@code clockUncertainty} after the grant of a term with a token at or above its own
 * (another participant's with an equal token is {@link ViolationKind#TERM_GRANTED_TWICE}). A participant's first
 * grant has no such bound (it may have joined long before) and is not checked; what its term does is checked all
 * the same: a reading of it that answered valid more than {@code clockUncertainty} after the greater term's grant
 * is {@link ViolationKind#LOCAL_VALIDITY}, and a write under it that landed after one of the greater term is {@link
 * ViolationKind#TOKEN_ORDER}.
 *
 * <p>Clocks. The second and the fourth check compare times written by different processes. They assume every
 * participant runs on one machine and reads the same system clock (Java's {@code System.currentTimeMillis()}), so two
 * readings differ from the true order only by their truncation to milliseconds and by a step of the clock during the
 * run, which {@code clockUncertainty} must cover; a reading, or a participant's line before a grant, is flagged only
 * when it is more than that after the other grant. A grant's time is read after the participant learned it leads,
 * and a check's or a line's before the check begins or the line is written, so every recording delay makes a flag
 * less likely, never more. Participants on several machines need an uncertainty
 * of their clocks' bound skew.
 *
 * <pre>{@code
 * CheckResult result = ElectionChecker.check(History.read(historyDir), observed.lists(),
 *         ElectionChecker.DEFAULT_CLOCK_UNCERTAINTY);
 * }</pre>
 *
 * A pure function of its inputs; thread-safe. The record counts of its {@link CheckResult} are 0.
 */
public final class ElectionChecker {
    /**
     * Two milliseconds of truncation (one per reading) and a margin for a small step of the clock: on one machine
     * the participants' clocks are one clock.
     */
    public static final Duration DEFAULT_CLOCK_UNCERTAINTY = Duration.ofMillis(5);

    private ElectionChecker() {}

    /**
     * @param lists each resource's list of ids, in the order the database applied them
     * @param clockUncertainty how far apart two participants' readings of one instant may be
     */
    public static CheckResult check(History history, Map<String, List<Long>> lists, Duration clockUncertainty) {
        List<Violation> violations = new ArrayList<>();
        Checker.WriteTally tally = Checker.checkWrites(history, lists, false, violations);
        checkValidity(history.termEvents(), clockUncertainty.toMillis(), violations);
        checkGrants(history.termEvents(), violations);
        checkGrantOrder(history.termEvents(), clockUncertainty.toMillis(), violations);
        return new CheckResult(
                history.size(),
                tally.ok,
                tally.failed,
                tally.indeterminate,
                0,
                0,
                0,
                0,
                tally.lost,
                tally.duplicated[0],
                violations);
    }

    /**
     * Each grant against the earlier grants of its election: one token granted to two participants is one term
     * handed out twice, two leaders at once, whatever their readings then answered and whenever they were taken.
     */
    private static void checkGrants(List<TermEvent> events, List<Violation> violations) {
        Map<String, TermEvent> firstGrants = new HashMap<>();
        Set<String> reported = new HashSet<>();
        for (TermEvent grant : events) {
            if (grant.kind() != TermEvent.Kind.GRANT) {
                continue;
            }
            String term = grant.resource() + "/" + grant.token();
            TermEvent first = firstGrants.putIfAbsent(term, grant);
            if (first != null && first.client() != grant.client() && reported.add(term)) {
                violations.add(new Violation(
                        ViolationKind.TERM_GRANTED_TWICE,
                        grant.resource(),
                        List.of(first.op(), grant.op()),
                        "term " + grant.token() + " of " + grant.resource() + " was granted to client "
                                + first.client() + " at " + first.time() + " and to client " + grant.client()
                                + " at " + grant.time() + ": two leaders of one term"));
            }
        }
    }

    /**
     * Each grant whose participant's previous line bounds its joining from below against the grants of its election
     * with a token at or above its own: one recorded before that line (beyond the uncertainty) was granted before
     * the participant joined, and so before its claim, which must then carry a greater token.
     */
    private static void checkGrantOrder(List<TermEvent> events, long uncertainty, List<Violation> violations) {
        for (TermEvent grant : events) {
            if (grant.kind() != TermEvent.Kind.GRANT || grant.joined() == 0) {
                continue;
            }
            TermEvent before = null;
            for (TermEvent other : events) {
                boolean greater = other.token() > grant.token()
                        || (other.token() == grant.token() && other.client() == grant.client());
                if (other != grant
                        && other.kind() == TermEvent.Kind.GRANT
                        && other.resource().equals(grant.resource())
                        && greater
                        && grant.joined() > other.time() + uncertainty
                        && (before == null || other.time() < before.time())) {
                    before = other;
                }
            }
            if (before != null) {
                violations.add(new Violation(
                        ViolationKind.TERM_ORDER,
                        grant.resource(),
                        List.of(grant.op(), before.op()),
                        grant.describeTerm() + " was granted (recorded at " + grant.time() + ") after its client joined"
                                + " the election again, which it did after its line at " + grant.joined() + ", "
                                + (grant.joined() - before.time()) + " ms after " + before.describeTerm()
                                + " was granted at " + before.time() + ": the election's tokens went backwards"));
            }
        }
    }

    /**
     * Each valid reading against the grants of greater terms of its election, to whichever participant, and of its
     * own term's token to another participant.
     */
    private static void checkValidity(List<TermEvent> events, long uncertainty, List<Violation> violations) {
        Map<String, List<TermEvent>> grants = new HashMap<>();
        for (TermEvent event : events) {
            if (event.kind() == TermEvent.Kind.GRANT) {
                grants.computeIfAbsent(event.resource(), r -> new ArrayList<>()).add(event);
            }
        }
        Set<String> reported = new HashSet<>();
        for (TermEvent reading : events) {
            if (reading.kind() != TermEvent.Kind.CHECK || !reading.valid()) {
                continue;
            }
            TermEvent next = null;
            for (TermEvent grant : grants.getOrDefault(reading.resource(), List.of())) {
                // any participant's: a participant granted a later term no longer holds its earlier one, and a
                // thread of it that still reads the earlier term valid breaks the contract as another's would.
                // One token granted to two participants is one term handed out twice: two leaders at once
                boolean ends = grant.token() > reading.token()
                        || (grant.token() == reading.token() && grant.client() != reading.client());
                if (ends && (next == null || grant.time() < next.time())) {
                    next = grant;
                }
            }
            if (next == null || reading.time() <= next.time() + uncertainty) {
                continue;
            }
            if (reported.add(reading.resource() + "/" + reading.client() + "/" + reading.token())) {
                violations.add(new Violation(
                        ViolationKind.LOCAL_VALIDITY,
                        reading.resource(),
                        List.of(reading.op(), next.op()),
                        reading.describeTerm() + " read valid at " + reading.time() + " (before op " + reading.op()
                                + "), " + (reading.time() - next.time()) + " ms after " + next.describeTerm()
                                + " was granted at " + next.time()));
            }
        }
    }
}
