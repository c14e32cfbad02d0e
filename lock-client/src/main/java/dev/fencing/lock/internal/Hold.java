package dev.fencing.lock.internal;

import dev.fencing.lock.LeaseLoss;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** One thread's hold of one lock, shared by its re-entrant leases. */
final class Hold {
    final PathLock lock;
    final String nodePath;
    final long token;
    final long sessionId;
    final Thread owner;
    final AtomicInteger entries = new AtomicInteger(1);
    private final AtomicReference<LeaseLoss> loss = new AtomicReference<>();

    Hold(PathLock lock, String nodePath, long token, long sessionId, Thread owner) {
        this.lock = lock;
        this.nodePath = nodePath;
        this.token = token;
        this.sessionId = sessionId;
        this.owner = owner;
    }

    /** Marks the hold invalid; true only for the call that did so. */
    boolean invalidate(LeaseLoss cause) {
        return loss.compareAndSet(null, cause);
    }

    LeaseLoss loss() {
        return loss.get();
    }
}
