package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.zookeeper.TokenSource;

/** A read/write lock's two handles; like {@link LockHandle}, it holds no ZooKeeper state. */
record ReadWriteLockHandle(LockHandle readLock, LockHandle writeLock) implements FencedReadWriteLock {

    @Override
    public String path() {
        return writeLock.path();
    }

    /** The token source of both locks; ZooKeeper's own, so not on {@link FencedReadWriteLock}. */
    TokenSource tokenSource() {
        return writeLock.tokenSource();
    }

    @Override
    public LockHandle readLock() {
        return readLock;
    }

    @Override
    public LockHandle writeLock() {
        return writeLock;
    }

    @Override
    public String toString() {
        return "FencedReadWriteLock[" + path() + ", " + tokenSource() + "]";
    }
}
