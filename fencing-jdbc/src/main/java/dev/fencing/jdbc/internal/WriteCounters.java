package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.WriteOutcome;

/** Where outcomes are counted; free of Micrometer types so that Micrometer stays optional. */
public interface WriteCounters {
    WriteCounters NONE = (table, outcome) -> {};

    void record(String table, WriteOutcome outcome);

    /** {@code count} outcomes like {@code outcome} at once (a batch's rows). */
    default void record(String table, WriteOutcome outcome, long count) {
        for (long i = 0; i < count; i++) {
            record(table, outcome);
        }
    }

    static String tag(WriteOutcome outcome) {
        if (outcome instanceof WriteOutcome.Applied) {
            return "applied";
        } else if (outcome instanceof WriteOutcome.Rejected) {
            return "rejected";
        } else if (outcome instanceof WriteOutcome.NotFound) {
            return "not_found";
        }
        return "predicate_failed";
    }
}
