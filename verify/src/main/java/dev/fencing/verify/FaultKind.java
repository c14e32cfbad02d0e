package dev.fencing.verify;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** The nemesis's faults. The JSON names are the keys of {@code "faults"} in {@code --json}; do not rename. */
enum FaultKind {
    /** A writer frozen with SIGSTOP, holding its lock, for longer than its ZooKeeper session. */
    PAUSE("pause", "pause", 10),
    /** A writer cut from ZooKeeper alone (blackhole route in its network namespace), still reaching PostgreSQL and Kafka. */
    PARTITION("partition", "partition", 3),
    /** The ZooKeeper ensemble's leader stopped, then restarted. */
    LEADER_KILL("leaderKill", "leader-kill", 1),
    /** A writer's PostgreSQL backend terminated in the middle of its write's transaction. */
    BACKEND_KILL("backendKill", "backend-kill", 2),
    /** A consumer member SIGKILLed and started again. */
    CONSUMER_CRASH("consumerCrash", "consumer-crash", 2),
    /** A consumer member added to the group, then removed: two rebalances. */
    REBALANCE("rebalance", "rebalance", 1),
    /**
     * A leading writer's ZooKeeper session expired while it goes on writing: alternately on the client side as
     * Curator's {@code KillSession} does (Curator replaces its handle and closing the old one ends the session, so
     * the next participant is elected before Curator reports LOST), and on the server at once.
     */
    SESSION_EXPIRY("sessionExpiry", "session-expiry", 2),
    /**
     * A reader frozen with SIGSTOP between its read and its return, holding its read lock, past its ZooKeeper
     * session and until a writer has written the resource: what it read is now stale (the rwlock resource only).
     */
    READ_PAUSE("readPause", "read-pause", 3);

    private final String jsonName;
    private final String flagName;
    private final int ciMinimum;

    FaultKind(String jsonName, String flagName, int ciMinimum) {
        this.jsonName = jsonName;
        this.flagName = flagName;
        this.ciMinimum = ciMinimum;
    }

    /** The key in the JSON summary's {@code "faults"}. */
    String jsonName() {
        return jsonName;
    }

    /** The name in {@code --faults}. */
    String flagName() {
        return flagName;
    }

    /** How many of these a run must inject before it may end (a run also ends at its time limit). */
    int minimum() {
        return ciMinimum;
    }

    /**
     * Parses a {@code --faults} list: comma-separated flag names (or JSON names), or {@code all}.
     *
     * @throws IllegalArgumentException naming an unknown fault, and the known ones
     */
    static Set<FaultKind> parseList(String list) {
        Set<FaultKind> faults = EnumSet.noneOf(FaultKind.class);
        for (String name : list.split(",")) {
            String trimmed = name.trim();
            if (trimmed.equalsIgnoreCase("all")) {
                faults.addAll(EnumSet.allOf(FaultKind.class));
                continue;
            }
            if (trimmed.equalsIgnoreCase("none")) {
                continue;
            }
            faults.add(of(trimmed));
        }
        return faults;
    }

    private static FaultKind of(String name) {
        for (FaultKind kind : values()) {
            if (kind.flagName.equals(name.toLowerCase(Locale.ROOT)) || kind.jsonName.equals(name)) {
                return kind;
            }
        }
        StringBuilder known = new StringBuilder();
        for (FaultKind kind : values()) {
            known.append(known.length() == 0 ? "" : ", ").append(kind.flagName);
        }
        throw new IllegalArgumentException("unknown fault '" + name + "'; known: " + known + ", all, none");
    }
}
