package dev.fencing.verify;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** Where the writers take their locks ({@code --locks}). The flag names are API; do not rename. */
enum LockService {
    /** fencing-zookeeper on a 3-node ensemble (embedded, or {@code --zookeeper}). Every fault applies. */
    ZOOKEEPER("zookeeper", "ZooKeeper", EnumSet.allOf(FaultKind.class)),
    /**
     * fencing-etcd on an embedded 3-member etcd cluster, each grant's etcd lease as long as the session timeout.
     * Session expiries are ZooKeeper's and do not apply; a pause outlasts the lease, a partition cuts the writer
     * from etcd alone, a leader kill kills the etcd leader member and starts it again.
     */
    ETCD("etcd", "etcd", EnumSet.complementOf(EnumSet.of(FaultKind.SESSION_EXPIRY)));

    private final String flagName;
    private final String displayName;
    private final Set<FaultKind> faults;

    LockService(String flagName, String displayName, Set<FaultKind> faults) {
        this.flagName = flagName;
        this.displayName = displayName;
        this.faults = Collections.unmodifiableSet(faults);
    }

    String flagName() {
        return flagName;
    }

    /** The service's name in messages: "cut from etcd", "ZooKeeper server 2". */
    String displayName() {
        return displayName;
    }

    /** The fault kinds that mean something with locks of this service. */
    Set<FaultKind> faults() {
        return faults;
    }

    /**
     * Parses {@code --locks}.
     *
     * @throws IllegalArgumentException naming the bad value and the known ones
     */
    static LockService parse(String name) {
        for (LockService service : values()) {
            if (service.flagName.equals(name == null ? "" : name.trim().toLowerCase(Locale.ROOT))) {
                return service;
            }
        }
        throw new IllegalArgumentException(VerifySettings.LOCKS_FLAG + " '" + name + "' is not one of zookeeper, etcd");
    }
}
