package dev.fencing.spring.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.spring.LockService;
import java.util.Objects;

/**
 * {@link LockService} on fencing-etcd's {@link EtcdLocks}: a lock path is one lock name ({@link #nameOf}), under
 * the locks' prefix.
 */
public final class EtcdLockService implements LockService {
    /** The value of {@code fencing.lock-service} that picks this service. */
    public static final String NAME = "etcd";

    private final EtcdLocks locks;

    public EtcdLockService(EtcdLocks locks) {
        this.locks = Objects.requireNonNull(locks, "locks");
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public FencedLock lock(String path) {
        return locks.lock(nameOf(path));
    }

    @Override
    public FencedLeaderElection election(String path, String participantId) {
        return locks.election(nameOf(path), participantId);
    }

    /**
     * The {@link EtcdLocks} name of a lock path: the path without its leading {@code /}, {@code %} written {@code
     * %25} and {@code /} written {@code %2F}. One path, one name, and two paths never share one: an etcd lock name
     * holds no {@code /}, or its keys would fall in another lock's range.
     *
     * @throws IllegalArgumentException if the path does not start with {@code /}, ends with one, or has an empty
     *     segment, as ZooKeeper refuses it too, or a blank one (only whitespace)
     */
    public static String nameOf(String path) {
        Objects.requireNonNull(path, "lock path");
        if (!path.startsWith("/") || path.length() == 1 || path.endsWith("/") || path.contains("//")) {
            throw new IllegalArgumentException("lock path '" + path + "' must start with '/', not end with one and"
                    + " have no empty segment, like /locks/inventory/A-1");
        }
        for (String segment : path.substring(1).split("/")) {
            if (segment.isBlank()) {
                // a blank name is no etcd lock; "/a/ /b" is as surely a slip
                throw new IllegalArgumentException(
                        "lock path '" + path + "' has a blank segment; use a path such as /locks/inventory/A-1");
            }
        }
        return path.substring(1).replace("%", "%25").replace("/", "%2F");
    }

    @Override
    public String toString() {
        return "LockService[etcd]";
    }
}
