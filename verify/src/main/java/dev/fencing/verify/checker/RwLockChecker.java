package dev.fencing.verify.checker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks a read/write-lock run's {@link History} against the lists its writers left in the database, knowing
 * nothing of the code that produced either. The workload's contract: one read/write lock per resource; a writer
 * appends its operation's id to the resource's list under its write grant's token, once per grant (an {@code
 * append}, as in the other workloads); a reader reads the list under its read grant's token and records how many
 * ids it saw ({@link Read}). The writers only ever append, so a read that saw {@code n} ids saw exactly the first
 * {@code n} of the list the run left. For each resource:
 *
 * <ul>
 *   <li>the writes, as {@link Checker} checks a list: only ids invoked for it ({@link ViolationKind#UNKNOWN_ID}),
 *       none twice ({@link ViolationKind#DUPLICATE}), in strictly increasing token order ({@link
 *       ViolationKind#TOKEN_ORDER}: a stale write landed), every acknowledged write present ({@link
 *       ViolationKind#LOST_ACKNOWLEDGED}) and no refused one ({@link ViolationKind#REFUSED_PRESENT});
 *   <li>no write in the list under a token that a read grant of the resource carried ({@link
 *       ViolationKind#READ_TOKEN_WRITE}): a read token must never be accepted for a write, whichever client sent
 *       it;
 *   <li>every read its client returned ({@link Outcome#OK}) saw every write to its resource acknowledged before it
 *       was returned ({@link ViolationKind#STALE_READ}), reported once per read, naming the first such write. A
 *       read's time is taken just before its client's last look at the resource (in the fenced run the check of
 *       the stored token that would have refused it), and a write's after its commit, so both recording delays
 *       make a flag less likely, never more. And, failing that, no fewer ids than a read of its resource returned
 *       before it was invoked had seen (STALE_READ too, naming that read): a read looks after its invoke and
 *       before its return, and the list only grows, so the ids the earlier read saw were there when the later
 *       looked, acknowledged or not. Reads the client discarded ({@link Outcome#FAIL}) or does not know about are
 *       not judged;
 *   <li>every read its client returned saw no more ids than the list the run left holds, and none whose write was
 *       invoked after the read was returned ({@link ViolationKind#UNEXPLAINED_READ}): the list only grows, so a read
 *       that saw more saw ids that were lost afterwards, and one that saw a later write's id at a position saw
 *       there an id lost afterwards, whether or not their writes were acknowledged.
 * </ul>
 *
 * <p>Clocks, as in {@link ElectionChecker}: every client runs on one machine and reads the same clock, and a
 * write is taken to precede a read only when its time is more than {@code clockUncertainty} before the read's.
 *
 * <pre>{@code
 * CheckResult result = RwLockChecker.check(History.read(historyDir), observed.lists(),
 *         RwLockChecker.DEFAULT_CLOCK_UNCERTAINTY);
 * }</pre>
 *
 * A pure function of its inputs; thread-safe. The record counts of its {@link CheckResult} are 0; its operation
 * counts include the reads.
 */
public final class RwLockChecker {
    /** As {@link ElectionChecker#DEFAULT_CLOCK_UNCERTAINTY}: one machine, one clock. */
    public static final Duration DEFAULT_CLOCK_UNCERTAINTY = ElectionChecker.DEFAULT_CLOCK_UNCERTAINTY;

    private RwLockChecker() {}

    /**
     * @param lists each resource's list of ids, in the order the database applied them
     * @param clockUncertainty how far apart two clients' readings of one instant may be
     */
    public static CheckResult check(History history, Map<String, List<Long>> lists, Duration clockUncertainty) {
        List<Violation> violations = new ArrayList<>();
        Checker.WriteTally tally = Checker.checkWrites(history, lists, true, violations);
        for (Read read : history.reads()) {
            tally.count(read.outcome());
        }
        checkReadTokens(history, lists, violations);
        checkReads(history, lists, clockUncertainty.toMillis(), violations);
        return new CheckResult(
                history.size() + history.reads().size(),
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

    /** Each write in a list against the read grants of its resource. */
    private static void checkReadTokens(History history, Map<String, List<Long>> lists, List<Violation> violations) {
        Map<String, Map<Long, Read>> readTokens = new HashMap<>();
        for (Read read : history.reads()) {
            readTokens.computeIfAbsent(read.resource(), r -> new HashMap<>()).putIfAbsent(read.token(), read);
        }
        lists.forEach((resource, ids) -> {
            Map<Long, Read> tokens = readTokens.getOrDefault(resource, Map.of());
            for (int i = 0; i < ids.size(); i++) {
                Operation op = history.operation(ids.get(i)).orElse(null);
                if (op == null || !op.resource().equals(resource)) {
                    continue; // an unknown id, reported by the list's check
                }
                Read read = tokens.get(op.token());
                if (read != null) {
                    violations.add(new Violation(
                            ViolationKind.READ_TOKEN_WRITE,
                            resource,
                            List.of(op.id(), read.id()),
                            op.describe() + " is at position " + (i + 1) + " of the list of " + resource
                                    + ", written under the token of " + read.describe()));
                }
            }
        });
    }

    /**
     * The ids a returned read saw, the first {@code seen} of the list, against the time it was returned: each was
     * written before the read looked, so invoked before the read was returned. An id invoked later stands where
     * another stood when the read looked, one lost afterwards, whose place the later write took. Reported once per
     * read, at the first such id.
     */
    private static void checkSeenWritten(
            History history, Read read, List<Long> ids, long uncertainty, List<Violation> violations) {
        for (int i = 0; i < Math.min(read.seen(), ids.size()); i++) {
            Operation write = history.operation(ids.get(i)).orElse(null);
            if (write == null || !write.resource().equals(read.resource())) {
                continue; // an unknown id, reported by the list's check
            }
            if (write.invokeTime() > read.completeTime() + uncertainty) {
                violations.add(new Violation(
                        ViolationKind.UNEXPLAINED_READ,
                        read.resource(),
                        List.of(read.id(), write.id()),
                        read.describe() + " saw the first " + read.seen() + " ids of the list of " + read.resource()
                                + " and was returned at " + read.completeTime() + ", but " + write.describe()
                                + ", at position " + (i + 1) + ", was invoked at " + write.invokeTime() + ", "
                                + (write.invokeTime() - read.completeTime()) + " ms after: the id the read saw there"
                                + " was lost afterwards, and a later write took its place"));
                return;
            }
        }
    }

    /**
     * For each returned read, the returned read of its resource that saw the most ids among those returned before it
     * was invoked, if any. A read looks at the list after it is invoked and before it is returned, and the list only
     * grows, so a read saw at least as many ids as any read returned before it began.
     */
    private static Map<Read, Read> seenMostBefore(List<Read> reads, long uncertainty) {
        Map<String, List<Read>> returned = new HashMap<>();
        for (Read read : reads) {
            if (read.outcome() == Outcome.OK) {
                returned.computeIfAbsent(read.resource(), r -> new ArrayList<>())
                        .add(read);
            }
        }
        Map<Read, Read> before = new HashMap<>();
        for (List<Read> ofResource : returned.values()) {
            List<Read> byReturn = new ArrayList<>(ofResource);
            byReturn.sort(Comparator.comparingLong(Read::completeTime));
            List<Read> byInvoke = new ArrayList<>(ofResource);
            byInvoke.sort(Comparator.comparingLong(Read::invokeTime));
            Read most = null;
            int next = 0;
            for (Read read : byInvoke) {
                while (next < byReturn.size() && byReturn.get(next).completeTime() + uncertainty < read.invokeTime()) {
                    Read earlier = byReturn.get(next++);
                    if (most == null || earlier.seen() > most.seen()) {
                        most = earlier;
                    }
                }
                if (most != null) {
                    before.put(read, most);
                }
            }
        }
        return before;
    }

    /** Each returned read against the writes of its resource acknowledged before it. */
    private static void checkReads(
            History history, Map<String, List<Long>> lists, long uncertainty, List<Violation> violations) {
        Map<String, Map<Long, Integer>> positions = new HashMap<>();
        lists.forEach((resource, ids) -> {
            Map<Long, Integer> at = new HashMap<>();
            for (int i = 0; i < ids.size(); i++) {
                at.putIfAbsent(ids.get(i), i);
            }
            positions.put(resource, at);
        });
        Map<String, List<Operation>> acknowledged = new HashMap<>();
        for (Operation op : history.operations()) {
            if (op.acknowledged()) {
                acknowledged
                        .computeIfAbsent(op.resource(), r -> new ArrayList<>())
                        .add(op);
            }
        }
        Map<Read, Read> seenMostBefore = seenMostBefore(history.reads(), uncertainty);
        for (Read read : history.reads()) {
            if (read.outcome() != Outcome.OK) {
                continue;
            }
            int held = lists.getOrDefault(read.resource(), List.of()).size();
            if (read.seen() > held) {
                violations.add(new Violation(
                        ViolationKind.UNEXPLAINED_READ,
                        read.resource(),
                        List.of(read.id()),
                        read.describe() + " saw " + read.seen() + " ids of the list of " + read.resource()
                                + ", but the list the run left holds " + held
                                + ": ids it saw were lost afterwards (the writers only append)"));
            } else {
                checkSeenWritten(
                        history, read, lists.getOrDefault(read.resource(), List.of()), uncertainty, violations);
            }
            Map<Long, Integer> at = positions.getOrDefault(read.resource(), Map.of());
            Operation missed = null;
            for (Operation write : acknowledged.getOrDefault(read.resource(), List.of())) {
                Integer position = at.get(write.id());
                if (position == null // lost: reported as such
                        || position < read.seen()
                        || write.completeTime() + uncertainty >= read.completeTime()) {
                    continue;
                }
                if (missed == null || write.completeTime() < missed.completeTime()) {
                    missed = write;
                }
            }
            Read before = seenMostBefore.get(read);
            if (missed == null && before != null && before.seen() > read.seen()) {
                violations.add(new Violation(
                        ViolationKind.STALE_READ,
                        read.resource(),
                        List.of(read.id(), before.id()),
                        read.describe() + " saw the first " + read.seen() + " ids of the list of " + read.resource()
                                + ", but " + before.describe() + ", returned at " + before.completeTime() + ", "
                                + (read.invokeTime() - before.completeTime()) + " ms before it was invoked at "
                                + read.invokeTime() + ", had seen " + before.seen()));
            } else if (missed != null) {
                violations.add(new Violation(
                        ViolationKind.STALE_READ,
                        read.resource(),
                        List.of(read.id(), missed.id()),
                        read.describe() + " saw the first " + read.seen() + " ids of the list of " + read.resource()
                                + " and was returned at " + read.completeTime() + ", but " + missed.describe()
                                + ", at position " + (at.get(missed.id()) + 1) + ", was acknowledged at "
                                + missed.completeTime() + ", " + (read.completeTime() - missed.completeTime())
                                + " ms before"));
            }
        }
    }
}
