package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.LeaseLoss;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.zookeeper.ZooKeeper;

/**
 * One thread's hold of one lock, shared by its re-entrant leases. A hold made for a leader election
 * carries a hook, run once by whichever thread invalidates it, right after the mark: it ends the term.
 */
final class Hold {
    final PathLock lock;
    final String nodePath;
    final long token;
    final long sessionId;
    /** Curator's handle generation read before the node was created: see {@link LockRegistry#handleGeneration()}. */
    final long handleGeneration;

    final Thread owner;
    final AtomicInteger entries = new AtomicInteger(1);
    private final AtomicReference<LeaseLoss> loss = new AtomicReference<>();
    /** The ZooKeeper handle of the session that owns the node; null if it was already gone at registration. */
    private volatile ZooKeeper owningHandle;

    private final Consumer<Hold> onLoss;

    Hold(
            PathLock lock,
            String nodePath,
            long token,
            long sessionId,
            long handleGeneration,
            Thread owner,
            Consumer<Hold> onLoss) {
        this.lock = lock;
        this.nodePath = nodePath;
        this.token = token;
        this.sessionId = sessionId;
        this.handleGeneration = handleGeneration;
        this.owner = owner;
        this.onLoss = onLoss;
    }

    /** Marks the hold invalid, then runs the hook; true only for the call that did so. */
    boolean invalidate(LeaseLoss cause) {
        if (!loss.compareAndSet(null, cause)) {
            return false;
        }
        if (onLoss != null) {
            onLoss.accept(this);
        }
        return true;
    }

    LeaseLoss loss() {
        return loss.get();
    }

    void ownedBy(ZooKeeper handle) {
        owningHandle = handle;
    }

    ZooKeeper owningHandle() {
        return owningHandle;
    }
}
