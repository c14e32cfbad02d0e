package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeasedWork;
import dev.fencing.lock.spi.Timeouts;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/** A cheap handle on one lock name; the state lives in the registry while a thread acquires or holds it. */
final class EtcdLockHandle implements FencedLock {
    private final EtcdLockRegistry registry;
    private final String name;
    private final String path;

    EtcdLockHandle(EtcdLockRegistry registry, String name) {
        this.registry = registry;
        this.name = name;
        this.path = registry.pathOf(name);
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public Lease acquire() {
        return registry.acquire(name, null).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return registry.acquire(name, Timeouts.capped(timeout));
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
        return "FencedLock[etcd " + path + "]";
    }
}
