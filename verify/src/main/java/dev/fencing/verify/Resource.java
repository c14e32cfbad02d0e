package dev.fencing.verify;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** What the writers write under their locks ({@code --resource}). The flag names are API; do not rename. */
enum Resource {
    /**
     * The whole chain: PostgreSQL rows through fencing-jdbc, a Kafka record per write, consumer members applying the
     * records. Every fault but session expiries applies.
     */
    POSTGRES("postgres", EnumSet.complementOf(EnumSet.of(FaultKind.SESSION_EXPIRY))),
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
            EnumSet.of(FaultKind.PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL, FaultKind.SESSION_EXPIRY));

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
                VerifySettings.RESOURCE_FLAG + " '" + name + "' is not one of postgres, redis, election");
    }
}
