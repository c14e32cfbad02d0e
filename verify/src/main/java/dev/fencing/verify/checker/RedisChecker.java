package dev.fencing.verify.checker;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Checks a Redis run's {@link History} against what it left in Redis ({@link RedisState}), knowing nothing of the
 * code that produced either. The workload's contract: each operation is one write to its resource under its
 * token, recorded as an {@code append} whose {@code invoke} is written just before the write is sent (after any
 * pause); its {@code path} says what it writes: a path ending in {@code script} sets the resource's value to the
 * operation's id and appends the id to the resource's log in one step, any other path sets the value only. Each
 * lock grant writes once, so tokens must rise strictly. For each resource:
 *
 * <ul>
 *   <li>the log, as {@link Checker} checks a PostgreSQL list: only ids of script writes invoked for it ({@link
 *       ViolationKind#UNKNOWN_ID}: a value-only write's id was appended by none), none twice ({@link ViolationKind#DUPLICATE}), in strictly increasing token
 *       order ({@link ViolationKind#TOKEN_ORDER}: a stale write landed), every acknowledged script write present
 *       ({@link ViolationKind#LOST_ACKNOWLEDGED}) and no refused one ({@link ViolationKind#REFUSED_PRESENT});
 *   <li>real time: no write acknowledged under a token at or below that of a write acknowledged before it was sent,
 *       and no two writes acknowledged under one token, whatever their times ({@link ViolationKind#STALE_WRITE}; the
 *       only way to see a value-only write land late). A write the log already shows out of order is not reported
 *       twice;
 *   <li>the final value: the id of the highest-token write known to have landed (acknowledged, or indeterminate
 *       but in the log), or of an indeterminate one with a higher token, in the log if it is a script write ({@link
 *       ViolationKind#FINAL_VALUE}); absent only if no write was acknowledged ({@link
 *       ViolationKind#LOST_ACKNOWLEDGED}) nor is in the log ({@link ViolationKind#FINAL_VALUE}); never an id of another resource or no operation, nor text the writes do
 *       not store (an id is stored as {@link Long#toString(long)} writes it: {@code " 5"}, {@code "+5"} or {@code
 *       "05"} is no write's value) ({@link ViolationKind#UNKNOWN_ID}) nor a refused write's ({@link ViolationKind#REFUSED_PRESENT});
 *   <li>the stored token, where there is one: the token of the write whose id is the value ({@link
 *       ViolationKind#STORED_TOKEN}), since a fenced write sets both in one step.
 * </ul>
 *
 * <pre>{@code
 * CheckResult result = RedisChecker.check(History.read(historyDir), state);
 * }</pre>
 *
 * A pure function of its inputs; thread-safe. The record counts of its {@link CheckResult} are 0.
 */
public final class RedisChecker {
    /** The end of the {@code path} of a write that appends to the log as well as setting the value. */
    public static final String LOGGED_PATH_SUFFIX = "script";

    private RedisChecker() {}

    public static CheckResult check(History history, RedisState state) {
        List<Violation> violations = new ArrayList<>();
        int[] duplicated = {0};
        Map<String, List<Operation>> byResource = new HashMap<>();
        for (Operation op : history.operations()) {
            byResource.computeIfAbsent(op.resource(), r -> new ArrayList<>()).add(op);
        }
        Set<String> resources = new TreeSet<>(byResource.keySet());
        resources.addAll(state.logs().keySet());
        resources.addAll(state.values().keySet());
        resources.addAll(state.tokens().keySet());

        int lost = 0;
        for (String resource : resources) {
            List<Operation> ops = byResource.getOrDefault(resource, List.of());
            List<Long> log = state.logs().getOrDefault(resource, List.of());
            int before = violations.size();
            Set<Long> logged = Checker.checkList(history, resource, log, true, violations, duplicated);
            for (int i = 0; i < log.size(); i++) {
                Operation op = history.operation(log.get(i)).orElse(null);
                if (op != null && op.resource().equals(resource) && !logs(op)) {
                    violations.add(new Violation(
                            ViolationKind.UNKNOWN_ID,
                            resource,
                            List.of(op.id()),
                            "id " + op.id() + " at position " + (i + 1) + " of the log of " + resource + " is that of "
                                    + op.describe() + ", whose path '" + op.path()
                                    + "' sets the value only: no write appended it"));
                }
            }
            Set<Long> outOfOrder = new HashSet<>();
            for (Violation violation : violations.subList(before, violations.size())) {
                if (violation.kind() == ViolationKind.TOKEN_ORDER) {
                    outOfOrder.add(violation.ops().get(0));
                }
            }
            for (Operation op : ops) {
                if (op.acknowledged() && logs(op) && !logged.contains(op.id())) {
                    lost++;
                    violations.add(new Violation(
                            ViolationKind.LOST_ACKNOWLEDGED,
                            resource,
                            List.of(op.id()),
                            op.describe() + " was acknowledged but is not in the log of " + resource));
                }
            }
            checkRealTime(resource, ops, outOfOrder, violations);
            lost += checkValue(history, resource, ops, logged, state, violations);
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
        return new CheckResult(history.size(), ok, failed, indeterminate, 0, 0, 0, 0, lost, duplicated[0], violations);
    }

    private static boolean logs(Operation op) {
        return op.path() != null && op.path().endsWith(LOGGED_PATH_SUFFIX);
    }

    /**
     * Each acknowledged write against the acknowledged writes that completed before it was invoked: a sweep over
     * both orders, keeping the highest token completed so far.
     */
    private static void checkRealTime(
            String resource, List<Operation> ops, Set<Long> outOfOrder, List<Violation> violations) {
        List<Operation> acknowledged =
                ops.stream().filter(Operation::acknowledged).toList();
        List<Operation> byCompletion = acknowledged.stream()
                .sorted(Comparator.comparingLong(Operation::completeTime))
                .toList();
        List<Operation> byInvoke = acknowledged.stream()
                .sorted(Comparator.comparingLong(Operation::invokeTime))
                .toList();
        Operation highest = null;
        int completed = 0;
        Set<Long> reported = new HashSet<>(outOfOrder);
        for (Operation op : byInvoke) {
            while (completed < byCompletion.size()
                    && byCompletion.get(completed).completeTime() < op.invokeTime()) {
                Operation done = byCompletion.get(completed++);
                if (highest == null || done.token() > highest.token()) {
                    highest = done;
                }
            }
            if (highest != null && op.token() <= highest.token() && reported.add(op.id())) {
                violations.add(new Violation(
                        ViolationKind.STALE_WRITE,
                        resource,
                        List.of(op.id(), highest.id()),
                        op.describe() + " was sent at " + op.invokeTime() + " and acknowledged, after "
                                + highest.describe() + " had been acknowledged at " + highest.completeTime()));
            }
        }
        // each grant writes once and the fence is strict: of two writes acknowledged under one token, the one applied
        // second was accepted under the token it found stored, though real time may order neither first
        Map<Long, Operation> firstUnderToken = new HashMap<>();
        for (Operation op : byInvoke) {
            Operation first = firstUnderToken.putIfAbsent(op.token(), op);
            if (first != null && reported.add(op.id())) {
                violations.add(new Violation(
                        ViolationKind.STALE_WRITE,
                        resource,
                        List.of(op.id(), first.id()),
                        op.describe() + " and " + first.describe() + " were both acknowledged under token "
                                + op.token() + ": a grant writes once, so one of them was accepted under the token"
                                + " already stored"));
            }
        }
    }

    /** Checks the value and the stored token; returns 1 if the value of an acknowledged write is missing. */
    private static int checkValue(
            History history,
            String resource,
            List<Operation> ops,
            Set<Long> logged,
            RedisState state,
            List<Violation> violations) {
        Operation highest = null;
        // the highest-token write known to have landed: acknowledged, or an indeterminate script write in the log
        Operation landed = null;
        for (Operation op : ops) {
            if (op.acknowledged() && (highest == null || op.token() > highest.token())) {
                highest = op;
            }
            boolean known = op.acknowledged() || (op.outcome() == Outcome.INFO && logged.contains(op.id()));
            if (known && (landed == null || op.token() > landed.token())) {
                landed = op;
            }
        }
        String value = state.values().get(resource);
        Long stored = state.tokens().get(resource);
        if (value == null) {
            if (stored != null) {
                violations.add(new Violation(
                        ViolationKind.STORED_TOKEN,
                        resource,
                        List.of(),
                        resource + " stores token " + stored + " but has no value"));
            }
            if (highest == null) {
                if (landed != null) {
                    // no write was acknowledged, but the log shows one landed, and its script set the value in the
                    // same step: the value was lost afterwards
                    violations.add(new Violation(
                            ViolationKind.FINAL_VALUE,
                            resource,
                            List.of(landed.id()),
                            resource + " has no value, but " + landed.describe() + ", whose script sets it in the"
                                    + " step that appends its id, is in the log of " + resource));
                }
                return 0;
            }
            violations.add(new Violation(
                    ViolationKind.LOST_ACKNOWLEDGED,
                    resource,
                    List.of(highest.id()),
                    resource + " has no value, but " + highest.describe() + " was acknowledged"));
            return 1;
        }
        Operation holder;
        try {
            long id = Long.parseLong(value);
            // the writes store Long.toString of the id: "+5" or "05" is text none of them stores
            holder = Long.toString(id).equals(value) ? history.operation(id).orElse(null) : null;
        } catch (NumberFormatException e) {
            holder = null;
        }
        if (holder == null || !holder.resource().equals(resource)) {
            violations.add(new Violation(
                    ViolationKind.UNKNOWN_ID,
                    resource,
                    List.of(),
                    "the value of " + resource + " is '" + value + "', "
                            + (holder == null
                                    ? "not the text of any operation's id"
                                    : "the id of " + holder.describe() + ", invoked for " + holder.resource())));
            return 0;
        }
        if (holder.outcome() == Outcome.FAIL) {
            violations.add(new Violation(
                    ViolationKind.REFUSED_PRESENT,
                    resource,
                    List.of(holder.id()),
                    holder.describe() + " was refused (" + holder.error() + ") but its id is the value of "
                            + resource));
        } else if (landed != null
                && holder != landed
                && !(holder.outcome() == Outcome.INFO && holder.token() > landed.token())) {
            violations.add(new Violation(
                    ViolationKind.FINAL_VALUE,
                    resource,
                    List.of(holder.id(), landed.id()),
                    "the value of " + resource + " was left by " + holder.describe()
                            + ", but the highest-token write that landed is " + landed.describe()
                            + (landed.acknowledged() ? " (acknowledged)" : " (in the log)")));
        } else if (holder.outcome() == Outcome.INFO && logs(holder) && !logged.contains(holder.id())) {
            // an acknowledged one missing from the log is reported lost
            violations.add(new Violation(
                    ViolationKind.FINAL_VALUE,
                    resource,
                    List.of(holder.id()),
                    "the value of " + resource + " was left by " + holder.describe() + ", whose script appends its"
                            + " id to the log in the same step, but it is not in the log of " + resource));
        }
        if (stored != null && stored != holder.token()) {
            violations.add(new Violation(
                    ViolationKind.STORED_TOKEN,
                    resource,
                    List.of(holder.id()),
                    resource + " stores token " + stored + " but its value was left by " + holder.describe()));
        }
        return 0;
    }
}
