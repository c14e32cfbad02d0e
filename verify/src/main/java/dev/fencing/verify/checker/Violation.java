package dev.fencing.verify.checker;

import java.util.List;

/**
 * One broken property, with the operations that break it spelled out.
 *
 * @param kind what is broken
 * @param key the resource (or record key) whose list shows it
 * @param ops the offending operation ids, the one that breaks the property first
 * @param detail a sentence naming the operations with their clients and tokens
 */
public record Violation(ViolationKind kind, String key, List<Long> ops, String detail) {
    public Violation {
        ops = List.copyOf(ops);
    }

    @Override
    public String toString() {
        return kind + " " + key + ": " + detail;
    }
}
