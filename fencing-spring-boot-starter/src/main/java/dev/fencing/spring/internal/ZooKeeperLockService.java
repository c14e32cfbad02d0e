package dev.fencing.spring.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.spring.LockService;
import java.util.Objects;

/** {@link LockService} on fencing-zookeeper's {@link FencedLocks}: a lock path is the lock's node. */
public final class ZooKeeperLockService implements LockService {
    /** The value of {@code fencing.lock-service} that picks this service. */
    public static final String NAME = "zookeeper";

    private final FencedLocks locks;

    public ZooKeeperLockService(FencedLocks locks) {
        this.locks = Objects.requireNonNull(locks, "locks");
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public FencedLock lock(String path) {
        return locks.lock(path);
    }

    @Override
    public FencedLeaderElection election(String path, String participantId) {
        return locks.election(path, participantId);
    }

    /**
     * The lock at {@code path} with {@code tokenSource}, a ZooKeeper setting: {@code null} is the locks' default, and
     * any other value on another service is refused, naming {@code what} asked for it.
     */
    public static FencedLock lock(LockService service, String path, TokenSource tokenSource, String what) {
        if (tokenSource == null) {
            return service.lock(path);
        }
        return zooKeeper(service, tokenSource, what).locks.lock(path, tokenSource);
    }

    /** As {@link #lock(LockService, String, TokenSource, String)}, for an election. */
    public static FencedLeaderElection election(
            LockService service, String path, String participantId, TokenSource tokenSource, String what) {
        if (tokenSource == null) {
            return service.election(path, participantId);
        }
        return zooKeeper(service, tokenSource, what).locks.election(path, participantId, tokenSource);
    }

    private static ZooKeeperLockService zooKeeper(LockService service, TokenSource tokenSource, String what) {
        if (service instanceof ZooKeeperLockService zk) {
            return zk;
        }
        throw new IllegalStateException(what + " names token source " + tokenSource + ", a ZooKeeper setting, but the"
                + " lock service is " + service.name() + ", whose tokens come from the service itself (on etcd, the"
                + " lock key's create revision): remove the token source");
    }

    @Override
    public String toString() {
        return "LockService[zookeeper]";
    }
}
