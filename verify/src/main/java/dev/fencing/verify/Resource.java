package dev.fencing.verify;

import dev.fencing.verify.checker.ViolationKind;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** What the writers write under their locks ({@code --resource}). The flag names are API; do not rename. */
enum Resource {
    /**
     * The whole chain: PostgreSQL rows through fencing-jdbc, a Kafka record per write, consumer members applying the
     * records. Every fault but session expiries and readers' pauses (it has no readers) applies.
     */
    POSTGRES("postgres", EnumSet.complementOf(EnumSet.of(FaultKind.SESSION_EXPIRY, FaultKind.READ_PAUSE))),
    /**
     * Redis keys through fencing-redis. No PostgreSQL, Kafka or consumers: pauses, partitions from ZooKeeper and
     * leader kills apply.
     */
    REDIS("redis", EnumSet.of(FaultKind.PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL)),
    /**
     * Leader elections, one per resource with several participants, whose leaders write PostgreSQL rows many
     * times per term through fencing-jdbc (MONOTONIC). No Kafka or consumers: pauses, partitions and session
     * expiries of leaders and leader kills apply.
     */
    ELECTION(
            "election",
            EnumSet.of(FaultKind.PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL, FaultKind.SESSION_EXPIRY)),
    /**
     * A read/write lock per resource: readers read the resource's PostgreSQL row under the read lock and check what
     * they read against the read token before returning it (fenced run); writers append to it under the write lock
     * through fencing-jdbc. No Kafka or consumers: pauses and partitions of writers, pauses of readers between read
     * and return, and leader kills apply.
     */
    RWLOCK("rwlock", EnumSet.of(FaultKind.PAUSE, FaultKind.READ_PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL));

    private final String flagName;
    private final Set<FaultKind> faults;

    Resource(String flagName, Set<FaultKind> faults) {
        this.flagName = flagName;
        this.faults = Collections.unmodifiableSet(faults);
    }

    String flagName() {
        return flagName;
    }

    /** The fault kinds that have something to attack in this resource's workload. */
    Set<FaultKind> faults() {
        return faults;
    }

    /**
     * The violations a control run must show for the checker to have proved anything about this resource: for the
     * read/write lock a stale read returned; for the others a stale write landed or a stale record applied. A control
     * run's other violations (records without a token applied, records applied twice after a crash) follow from a
     * plain consumer's settings whatever the faults did, so they alone would let a schedule that never let a stale
     * holder act pass.
     */
    Set<ViolationKind> staleKinds() {
        return this == RWLOCK
                ? EnumSet.of(ViolationKind.STALE_READ)
                : EnumSet.of(ViolationKind.TOKEN_ORDER, ViolationKind.RECORD_TOKEN_ORDER, ViolationKind.STALE_WRITE);
    }

    /** Whether this is the PostgreSQL and Kafka chain (with its tables, topic and consumers). */
    boolean chain() {
        return this == POSTGRES;
    }

    /** Whether its writers write PostgreSQL (the run's database is made for them). */
    boolean postgres() {
        return this != REDIS;
    }

    /**
     * Parses {@code --resource}.
     *
     * @throws IllegalArgumentException naming the bad value and the known ones
     */
    static Resource parse(String name) {
        for (Resource resource : values()) {
            if (resource.flagName.equals(name == null ? "" : name.trim().toLowerCase(Locale.ROOT))) {
                return resource;
            }
        }
        throw new IllegalArgumentException(
                VerifySettings.RESOURCE_FLAG + " '" + name + "' is not one of postgres, redis, election, rwlock");
    }
}
