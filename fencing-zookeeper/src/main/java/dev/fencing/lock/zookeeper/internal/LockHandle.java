package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeasedWork;
import dev.fencing.lock.spi.Timeouts;
import dev.fencing.lock.zookeeper.TokenSource;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link LockRegistry#lock} hands out: a path and a token source. It holds no ZooKeeper state, so
 * callers may keep as many as they like; each acquire checks the path's shared {@link PathLock} out of
 * the registry, which drops it once nobody acquires or holds it.
 */
final class LockHandle implements FencedLock {
    private final LockRegistry registry;
    private final String path;
    private final TokenSource source;
    private final LockKind kind;

    LockHandle(LockRegistry registry, String path, TokenSource source, LockKind kind) {
        this.registry = registry;
        this.path = path;
        this.source = source;
        this.kind = kind;
    }

    @Override
    public String path() {
        return path;
    }

    /** ZooKeeper's own, so not on {@link FencedLock}. */
    TokenSource tokenSource() {
        return source;
    }

    @Override
    public Lease acquire() {
        return registry.checkout(path, source, kind).acquire(null).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout for lock " + path + " must be positive, got " + timeout);
        }
        return registry.checkout(path, source, kind).acquire(Timeouts.capped(timeout));
    }

    @Override
    public <T> T runLocked(LeasedWork<T> work) {
        Objects.requireNonNull(work, "work");
        try (Lease lease = acquire()) {
            return work.run(lease);
        }
    }

    @Override
    public String toString() {
        return switch (kind) {
            case EXCLUSIVE -> "FencedLock[" + path + ", " + source + "]";
            case READ -> "FencedReadWriteLock.readLock[" + path + ", " + source + "]";
            case WRITE -> "FencedReadWriteLock.writeLock[" + path + ", " + source + "]";
        };
    }
}
