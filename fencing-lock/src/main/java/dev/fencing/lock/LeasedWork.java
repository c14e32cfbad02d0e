package dev.fencing.lock;

/** Work run under a lock by {@link FencedLock#runLocked(LeasedWork)}; it gets the lease with its token. */
@FunctionalInterface
public interface LeasedWork<T> {
    T run(Lease lease);
}
