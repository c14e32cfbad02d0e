package dev.fencing.verify.checker;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The checker's verdict on one run: counts of what happened and every violation found.
 *
 * @param operations appends invoked
 * @param ok appends acknowledged
 * @param failed appends refused
 * @param indeterminate appends whose outcome is unknown (info, or no completion recorded)
 * @param recordsProduced records Kafka acknowledged
 * @param recordsApplied entries in the applied lists (a record applied twice counts twice)
 * @param recordsDeadLettered dead letters for a reason other than a stale token
 * @param recordsDropped dead letters for a stale token (refused because a newer token of the key was applied)
 * @param lostAcknowledged acknowledged appends missing from their list plus acknowledged records lost
 * @param duplicated extra occurrences of ids in the lists and in the applied lists
 * @param violations every violation, lists first, then records, each in key order
 */
public record CheckResult(
        int operations,
        int ok,
        int failed,
        int indeterminate,
        int recordsProduced,
        int recordsApplied,
        int recordsDeadLettered,
        int recordsDropped,
        int lostAcknowledged,
        int duplicated,
        List<Violation> violations) {

    public CheckResult {
        violations = List.copyOf(violations);
    }

    /** Whether no property is broken. */
    public boolean valid() {
        return violations.isEmpty();
    }

    /** How many violations of each kind, every kind present (zero where none). */
    public Map<ViolationKind, Integer> violationsByKind() {
        Map<ViolationKind, Integer> counts = new EnumMap<>(ViolationKind.class);
        for (ViolationKind kind : ViolationKind.values()) {
            counts.put(kind, 0);
        }
        for (Violation violation : violations) {
            counts.merge(violation.kind(), 1, Integer::sum);
        }
        return counts;
    }
}
