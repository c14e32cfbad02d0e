package dev.fencing.verify.checker;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks a run's {@link History} against what it left in the database ({@link Observed}), knowing nothing of
 * the code that produced either. For each resource, with each operation's token taken from the histories:
 *
 * <ul>
 *   <li>its list holds only ids invoked for it ({@link ViolationKind#UNKNOWN_ID}), none twice ({@link
 *       ViolationKind#DUPLICATE}), in increasing token order ({@link ViolationKind#TOKEN_ORDER}: strictly
 *       increasing with {@link Options#strictLists}, which a resource written once per lock grant must show;
 *       otherwise non-decreasing, an equal token only from the same client, since a token is one grant's);
 *   <li>every acknowledged append is in it ({@link ViolationKind#LOST_ACKNOWLEDGED}) and no refused one is
 *       ({@link ViolationKind#REFUSED_PRESENT}); an indeterminate one may be either;
 * </ul>
 *
 * and for each record key, in the consumers' applied list:
 *
 * <ul>
 *   <li>only ids that were published for that key, a publish its client recorded as refused being none ({@link
 *       ViolationKind#RECORD_UNKNOWN_ID}, for a dead letter too), none twice, across
 *       crashes and rebalances ({@link ViolationKind#RECORD_DUPLICATE}), in non-decreasing token order ({@link
 *       ViolationKind#RECORD_TOKEN_ORDER}; strictly with {@link Options#strictRecords}, otherwise an equal token
 *       only from the same client, as in a list: two clients under one token are two holders of one grant), both
 *       in the order they
 *       were applied and in the log's order (no applied record behind an applied one of its key with a newer
 *       token, at the offsets the histories recorded, or, for a record whose offset is unknown, sent after that one
 *       was acknowledged), none sent without a
 *       token ({@link ViolationKind#RECORD_UNSTAMPED_APPLIED});
 *   <li>every record Kafka acknowledged is applied or dead-lettered ({@link ViolationKind#RECORD_LOST}); a dead
 *       letter for a stale token is justified only by a newer token of its key applied from an offset earlier than
 *       the one its record was published at (as the history recorded it; an unknown offset counts as earlier unless its
 *       record was sent after the stale one was acknowledged), a stamped record is dead-lettered for
 *       nothing else and a record without a token for nothing but {@code MISSING_TOKEN}, and a record is never
 *       both applied and dead-lettered ({@link ViolationKind#RECORD_REFUSED_WRONGLY}).
 * </ul>
 *
 * <pre>{@code
 * CheckResult result = Checker.check(History.read(historyDir), Observed.read(connection, "verify_fenced"),
 *         Checker.Options.DEFAULT);
 * result.violations().forEach(System.out::println);
 * }</pre>
 *
 * A pure function of its inputs; thread-safe.
 */
public final class Checker {
    private Checker() {}

    /**
     * How strictly tokens must increase.
     *
     * @param strictLists tokens in a resource's list strictly increasing (each grant writes a resource once)
     * @param strictRecords tokens in an applied list strictly increasing (false: equal tokens of one client
     *     allowed, as a consumer under the MONOTONIC policy accepts them)
     */
    public record Options(boolean strictLists, boolean strictRecords) {
        /** Strict lists, non-decreasing applied lists. */
        public static final Options DEFAULT = new Options(true, false);
    }

    public static CheckResult check(History history, Observed observed, Options options) {
        List<Violation> violations = new ArrayList<>();
        int[] duplicated = {0};

        Map<String, Set<Long>> listed = new HashMap<>();
        observed.lists()
                .forEach((resource, ids) -> listed.put(
                        resource, checkList(history, resource, ids, options.strictLists(), violations, duplicated)));
        int lostAppends = 0;
        for (Operation op : history.operations()) {
            if (op.acknowledged()
                    && !listed.getOrDefault(op.resource(), Set.of()).contains(op.id())) {
                lostAppends++;
                violations.add(new Violation(
                        ViolationKind.LOST_ACKNOWLEDGED,
                        op.resource(),
                        List.of(op.id()),
                        op.describe() + " was acknowledged but is not in the list of " + op.resource()));
            }
        }

        Map<Long, AppliedAt> applied = new HashMap<>();
        int recordsApplied = 0;
        for (Map.Entry<String, List<Long>> entry : observed.applied().entrySet()) {
            recordsApplied += entry.getValue().size();
            checkApplied(
                    history,
                    entry.getKey(),
                    entry.getValue(),
                    options.strictRecords(),
                    applied,
                    violations,
                    duplicated);
        }

        Set<Long> deadLettered = new HashSet<>();
        Set<Long> dropped = new HashSet<>();
        Set<Long> otherDeadLetters = new HashSet<>();
        for (DeadLetter letter : observed.deadLetters()) {
            checkDeadLetter(history, observed, letter, options.strictRecords(), applied, violations);
            if (letter.op() != null) {
                deadLettered.add(letter.op());
                (letter.stale() ? dropped : otherDeadLetters).add(letter.op());
            }
        }
        int lostRecords = 0;
        int produced = 0;
        for (Operation op : history.operations()) {
            if (op.publish() == null || !op.publish().acknowledged()) {
                continue;
            }
            produced++;
            if (!applied.containsKey(op.id()) && !deadLettered.contains(op.id())) {
                lostRecords++;
                violations.add(new Violation(
                        ViolationKind.RECORD_LOST,
                        op.resource(),
                        List.of(op.id()),
                        "the record of " + op.describe() + " was acknowledged at partition "
                                + op.publish().partition() + " offset "
                                + op.publish().offset()
                                + " but was neither applied nor dead-lettered"));
            }
        }

        int ok = 0;
        int failed = 0;
        int indeterminate = 0;
        for (Operation op : history.operations()) {
            switch (op.outcome()) {
                case OK -> ok++;
                case FAIL -> failed++;
                case INFO -> indeterminate++;
            }
        }
        return new CheckResult(
                history.size(),
                ok,
                failed,
                indeterminate,
                produced,
                recordsApplied,
                otherDeadLetters.size(),
                dropped.size(),
                lostAppends + lostRecords,
                duplicated[0],
                violations);
    }

    /** What {@link #checkWrites} counted: the writes' outcomes, acknowledged writes lost, ids listed twice. */
    static final class WriteTally {
        int ok;
        int failed;
        int indeterminate;
        int lost;
        final int[] duplicated = {0};

        void count(Outcome outcome) {
            switch (outcome) {
                case OK -> ok++;
                case FAIL -> failed++;
                case INFO -> indeterminate++;
            }
        }
    }

    /**
     * The check of a workload whose writes append their ids to one list per resource (elections, read/write locks):
     * each list ({@link #checkList}), each write's outcome counted, and each acknowledged write missing from its
     * resource's list ({@link ViolationKind#LOST_ACKNOWLEDGED}).
     */
    static WriteTally checkWrites(
            History history, Map<String, List<Long>> lists, boolean strictOrder, List<Violation> violations) {
        WriteTally tally = new WriteTally();
        Map<String, Set<Long>> listed = new HashMap<>();
        lists.forEach((resource, ids) ->
                listed.put(resource, checkList(history, resource, ids, strictOrder, violations, tally.duplicated)));
        for (Operation op : history.operations()) {
            tally.count(op.outcome());
            if (op.acknowledged()
                    && !listed.getOrDefault(op.resource(), Set.of()).contains(op.id())) {
                tally.lost++;
                violations.add(new Violation(
                        ViolationKind.LOST_ACKNOWLEDGED,
                        op.resource(),
                        List.of(op.id()),
                        op.describe() + " was acknowledged but is not in the list of " + op.resource()));
            }
        }
        return tally;
    }

    /** Returns the known ids of the list. Also {@link RedisChecker}'s check of a Redis list. */
    static Set<Long> checkList(
            History history,
            String resource,
            List<Long> ids,
            boolean strict,
            List<Violation> violations,
            int[] duplicated) {
        Map<Long, Integer> positions = new HashMap<>();
        Operation newest = null;
        for (int i = 0; i < ids.size(); i++) {
            long id = ids.get(i);
            Operation op = history.operation(id).orElse(null);
            if (op == null || !op.resource().equals(resource)) {
                violations.add(new Violation(
                        ViolationKind.UNKNOWN_ID,
                        resource,
                        List.of(id),
                        "id " + id + " at position " + (i + 1) + " of the list of " + resource + " "
                                + (op == null ? "was invoked by no client" : "was invoked for " + op.resource())));
                continue;
            }
            Integer earlier = positions.putIfAbsent(id, i);
            if (earlier != null) {
                duplicated[0]++;
                violations.add(new Violation(
                        ViolationKind.DUPLICATE,
                        resource,
                        List.of(id),
                        op.describe() + " is in the list of " + resource + " twice, at positions " + (earlier + 1)
                                + " and " + (i + 1)));
                continue;
            }
            if (op.outcome() == Outcome.FAIL) {
                violations.add(new Violation(
                        ViolationKind.REFUSED_PRESENT,
                        resource,
                        List.of(id),
                        op.describe() + " was refused (" + op.error() + ") but is in the list of " + resource
                                + " at position " + (i + 1)));
            }
            if (behind(op, newest, strict)) {
                violations.add(new Violation(
                        ViolationKind.TOKEN_ORDER,
                        resource,
                        List.of(id, newest.id()),
                        "in the list of " + resource + ", " + op.describe() + " at position " + (i + 1)
                                + " comes after " + newest.describe() + " at position "
                                + (positions.get(newest.id()) + 1)));
            } else if (newest != null && op.token() == newest.token() && op.client() != newest.client()) {
                // a token is one grant's, and a grant is one client's: equal tokens from two clients are two
                // holders of one grant, both writing, which a fence comparing tokens cannot tell apart
                violations.add(new Violation(
                        ViolationKind.TOKEN_ORDER,
                        resource,
                        List.of(id, newest.id()),
                        "in the list of " + resource + ", " + op.describe() + " at position " + (i + 1)
                                + " was written under the token of " + newest.describe() + " at position "
                                + (positions.get(newest.id()) + 1) + ", another client's"));
            } else if (newest == null || op.token() > newest.token()) {
                newest = op;
            }
        }
        return positions.keySet();
    }

    /** Where an id was applied: its key and position, and its operation. */
    private record AppliedAt(String key, int position, Operation op) {}

    private static void checkApplied(
            History history,
            String key,
            List<Long> ids,
            boolean strict,
            Map<Long, AppliedAt> applied,
            List<Violation> violations,
            int[] duplicated) {
        Operation newest = null;
        Set<Long> outOfOrder = new HashSet<>();
        List<Operation> inLog = new ArrayList<>();
        List<Operation> offsetUnknown = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            long id = ids.get(i);
            Operation op = history.operation(id).orElse(null);
            if (op == null || !published(op) || !op.resource().equals(key)) {
                violations.add(new Violation(
                        ViolationKind.RECORD_UNKNOWN_ID,
                        key,
                        List.of(id),
                        "id " + id + " was applied for key " + key + " at position " + (i + 1) + " but "
                                + (op == null
                                        ? "no client invoked it"
                                        : !published(op)
                                                ? notPublished(op)
                                                : "it was published for key " + op.resource())));
                continue;
            }
            AppliedAt earlier = applied.putIfAbsent(id, new AppliedAt(key, i, op));
            if (earlier != null) {
                duplicated[0]++;
                violations.add(new Violation(
                        ViolationKind.RECORD_DUPLICATE,
                        key,
                        List.of(id),
                        "the record of " + op.describe() + " was applied twice, at positions "
                                + (earlier.position() + 1) + " and " + (i + 1) + " of key " + key));
                continue;
            }
            if (!op.publish().stamped()) {
                violations.add(new Violation(
                        ViolationKind.RECORD_UNSTAMPED_APPLIED,
                        key,
                        List.of(id),
                        "the record of " + op.describe() + " carried no token but was applied at position " + (i + 1)
                                + " of key " + key));
            }
            if (behind(op, newest, strict)) {
                outOfOrder.add(id);
                violations.add(new Violation(
                        ViolationKind.RECORD_TOKEN_ORDER,
                        key,
                        List.of(id, newest.id()),
                        "for key " + key + ", the record of " + op.describe() + " was applied after that of "
                                + newest.describe()));
            } else if (newest != null && op.token() == newest.token() && op.client() != newest.client()) {
                // as in a resource's list: equal tokens from two clients are two holders of one grant, both
                // publishing, which a consumer comparing tokens cannot tell apart
                outOfOrder.add(id);
                violations.add(new Violation(
                        ViolationKind.RECORD_TOKEN_ORDER,
                        key,
                        List.of(id, newest.id()),
                        "for key " + key + ", the record of " + op.describe() + " was applied under the token of "
                                + newest.describe() + ", another client's"));
            } else if (newest == null || op.token() > newest.token()) {
                newest = op;
            }
            if (op.publish().partition() != null && op.publish().offset() != null) {
                inLog.add(op);
            } else {
                offsetUnknown.add(op);
            }
        }
        checkAppliedInLogOrder(key, inLog, strict, outOfOrder, violations);
        if (inOnePartition(history, key)) {
            checkAppliedBehindAcknowledged(key, inLog, offsetUnknown, strict, outOfOrder, violations);
        }
    }

    /**
     * Whether {@code op}'s record may be in the log: its client sent it and the send was not refused. A refused
     * send ({@code fail}) was definitely not done, as a refused append, so its record applied or dead-lettered is one
     * nobody published.
     */
    private static boolean published(Operation op) {
        return op.publish() != null && op.publish().outcome() != Outcome.FAIL;
    }

    private static String notPublished(Operation op) {
        return op.publish() == null
                ? "its client never published it"
                : "its publish was refused (" + op.publish().error() + ")";
    }

    /** Whether {@code op} comes too late after {@code newest} (null: nothing before it): a lower token, or equal when strict. */
    private static boolean behind(Operation op, Operation newest, boolean strict) {
        return newest != null && (op.token() < newest.token() || (strict && op.token() == newest.token()));
    }

    /**
     * A key's applied records against the log: a record is stale when a record of its key ahead of it in its
     * partition, with a newer token, was applied, whichever the consumer applied first. Without this, a consumer
     * that takes a key's records out of log order applies a late stale record before the newer one ahead of it, and
     * the applied list still rises. Records whose offset the history does not know are left to the applied order.
     */
    private static void checkAppliedInLogOrder(
            String key, List<Operation> inLog, boolean strict, Set<Long> reported, List<Violation> violations) {
        List<Operation> byOffset = new ArrayList<>(inLog);
        byOffset.sort(Comparator.comparing((Operation op) -> op.publish().partition())
                .thenComparing(op -> op.publish().offset()));
        Operation newest = null;
        for (Operation op : byOffset) {
            if (newest != null
                    && !newest.publish().partition().equals(op.publish().partition())) {
                newest = null;
            }
            if (behind(op, newest, strict)) {
                if (reported.add(op.id())) {
                    violations.add(new Violation(
                            ViolationKind.RECORD_TOKEN_ORDER,
                            key,
                            List.of(op.id(), newest.id()),
                            "for key " + key + ", the record of " + op.describe() + " at offset "
                                    + op.publish().offset() + " was applied, though that of " + newest.describe()
                                    + " ahead of it at offset "
                                    + newest.publish().offset()
                                    + " carried a newer token and was applied"));
                }
            } else if (newest == null || op.token() > newest.token()) {
                newest = op;
            }
        }
    }

    /**
     * A key's applied records whose offset the history does not know (their send timed out, or their client died
     * before it heard) against the applied records of the key it knows: a record sent after another record of its
     * key was acknowledged lies behind it in the log, whatever its offset. Without this, a consumer that takes a
     * late stale record out of log order, ahead of the newer one, goes unseen whenever the stale record's send timed
     * out. For a key {@link #inOnePartition}.
     */
    private static void checkAppliedBehindAcknowledged(
            String key,
            List<Operation> inLog,
            List<Operation> offsetUnknown,
            boolean strict,
            Set<Long> reported,
            List<Violation> violations) {
        for (Operation op : offsetUnknown) {
            Operation newest = null;
            for (Operation ahead : inLog) {
                if (sentAfterAcknowledged(op, ahead) && (newest == null || ahead.token() > newest.token())) {
                    newest = ahead;
                }
            }
            if (behind(op, newest, strict) && reported.add(op.id())) {
                violations.add(new Violation(
                        ViolationKind.RECORD_TOKEN_ORDER,
                        key,
                        List.of(op.id(), newest.id()),
                        "for key " + key + ", the record of " + op.describe() + ", sent at "
                                + op.publish().invokeTime() + " (its offset unknown: "
                                + op.publish().error()
                                + "), was applied, though that of " + newest.describe() + ", acknowledged at offset "
                                + newest.publish().offset() + " at "
                                + newest.publish().completeTime()
                                + " and so ahead of it in the log, carried a newer token and was applied"));
            }
        }
    }

    /**
     * Whether every record of {@code key} that Kafka acknowledged is in one partition, so that a record of the key
     * whose partition the history does not know is in that one too (the key decides the partition). Then a record
     * sent after another of its key was acknowledged lies behind it in the log: both times are read from one clock,
     * as every client runs on one machine.
     */
    private static boolean inOnePartition(History history, String key) {
        return history.operations().stream()
                        .filter(op -> op.resource().equals(key)
                                && op.publish() != null
                                && op.publish().partition() != null)
                        .map(op -> op.publish().partition())
                        .distinct()
                        .count()
                == 1;
    }

    /** Whether {@code later}'s record was sent after {@code earlier}'s was acknowledged. */
    private static boolean sentAfterAcknowledged(Operation later, Operation earlier) {
        return earlier.publish().acknowledged()
                && earlier.publish().completeTime() < later.publish().invokeTime();
    }

    private static void checkDeadLetter(
            History history,
            Observed observed,
            DeadLetter letter,
            boolean strict,
            Map<Long, AppliedAt> applied,
            List<Violation> violations) {
        Operation op =
                letter.op() == null ? null : history.operation(letter.op()).orElse(null);
        String where = " (partition " + letter.originPartition() + " offset " + letter.originOffset() + ")";
        if (op == null || !published(op) || !op.resource().equals(letter.key())) {
            violations.add(new Violation(
                    ViolationKind.RECORD_UNKNOWN_ID,
                    letter.key(),
                    letter.op() == null ? List.of() : List.of(letter.op()),
                    "a dead letter of key " + letter.key() + where + " carries "
                            + (letter.op() == null ? "no operation id" : "id " + letter.op())
                            + (op != null && op.publish() != null && !published(op)
                                    ? ", but " + notPublished(op)
                                    : " that no client published for that key")));
            return;
        }
        if (applied.containsKey(op.id())) {
            violations.add(new Violation(
                    ViolationKind.RECORD_REFUSED_WRONGLY,
                    letter.key(),
                    List.of(op.id()),
                    "the record of " + op.describe() + " was applied and also dead-lettered as " + letter.reason()
                            + where));
            return;
        }
        if (letter.stale() && !op.publish().stamped()) {
            violations.add(new Violation(
                    ViolationKind.RECORD_REFUSED_WRONGLY,
                    letter.key(),
                    List.of(op.id()),
                    "the record of " + op.describe() + where + " carried no token but was dead-lettered as stale"));
        } else if (letter.stale()) {
            Operation newer = newerAppliedBefore(history, observed, applied, op, letter, strict);
            if (newer == null) {
                violations.add(new Violation(
                        ViolationKind.RECORD_REFUSED_WRONGLY,
                        letter.key(),
                        List.of(op.id()),
                        "the record of " + op.describe() + where + " was dead-lettered as stale, but no record of "
                                + letter.key() + " with a newer token was applied from an earlier offset"));
            }
        } else if (op.publish().stamped()) {
            // a workload record has a key and a readable value: stamped, only a stale token can refuse it
            violations.add(new Violation(
                    ViolationKind.RECORD_REFUSED_WRONGLY,
                    letter.key(),
                    List.of(op.id()),
                    "the record of " + op.describe() + where + " carried its token but was dead-lettered as "
                            + letter.reason()));
        } else if (!letter.reason().equals(DeadLetter.MISSING_TOKEN)) {
            violations.add(new Violation(
                    ViolationKind.RECORD_REFUSED_WRONGLY,
                    letter.key(),
                    List.of(op.id()),
                    "the record of " + op.describe() + where + " carried no token but was dead-lettered as "
                            + letter.reason() + ", not " + DeadLetter.MISSING_TOKEN));
        }
    }

    /**
     * An applied record of the same key with a newer token, from an offset earlier than the one the stale record was
     * published at, or from an unknown offset unless it was sent after the stale record was acknowledged; or null.
     */
    private static Operation newerAppliedBefore(
            History history,
            Observed observed,
            Map<Long, AppliedAt> applied,
            Operation stale,
            DeadLetter letter,
            boolean strict) {
        for (long id : observed.applied().getOrDefault(letter.key(), List.of())) {
            AppliedAt at = applied.get(id);
            if (at == null || !at.key().equals(letter.key())) {
                continue;
            }
            Operation candidate = at.op();
            boolean newer = strict ? candidate.token() >= stale.token() : candidate.token() > stale.token();
            Long offset = candidate.publish().offset();
            Integer partition = candidate.publish().partition();
            // where the stale record was published, as its client recorded it; the dead letter's own origin
            // headers, written by the consumer under test, only when the history does not know
            boolean known =
                    stale.publish().partition() != null && stale.publish().offset() != null;
            int stalePartition = known ? stale.publish().partition() : letter.originPartition();
            long staleOffset = known ? stale.publish().offset() : letter.originOffset();
            boolean earlier = offset == null || partition == null
                    // a newer record whose offset is unknown is behind the stale one if it was sent after the
                    // stale one was acknowledged (its partition then the key's one)
                    ? !(inOnePartition(history, letter.key()) && sentAfterAcknowledged(candidate, stale))
                    : partition != stalePartition || offset < staleOffset;
            if (newer && earlier && candidate.id() != stale.id()) {
                return candidate;
            }
        }
        return null;
    }
}
