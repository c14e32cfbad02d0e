package dev.fencing.lock.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.TokenSource;

/** A read/write lock's two handles; like {@link LockHandle}, it holds no ZooKeeper state. */
record ReadWriteLockHandle(FencedLock readLock, FencedLock writeLock) implements FencedReadWriteLock {

    @Override
    public String path() {
        return writeLock.path();
    }

    @Override
    public TokenSource tokenSource() {
        return writeLock.tokenSource();
    }

    @Override
    public FencedLock readLock() {
        return readLock;
    }

    @Override
    public FencedLock writeLock() {
        return writeLock;
    }

    @Override
    public String toString() {
        return "FencedReadWriteLock[" + path() + ", " + tokenSource() + "]";
    }
}
