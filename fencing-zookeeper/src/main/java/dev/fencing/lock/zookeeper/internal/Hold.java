package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.LeaseHold;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.zookeeper.ZooKeeper;

/**
 * One thread's hold of one lock, shared by its re-entrant leases. A hold made for a leader election
 * carries a hook, run once by whichever thread invalidates it, right after the mark: it ends the term.
 */
final class Hold implements LeaseHold {
    final PathLock lock;
    final String nodePath;
    final long token;
    final long sessionId;
    /** Curator's handle generation read before the node was created: see {@link LockRegistry#handleGeneration()}. */
    final long handleGeneration;

    final Thread owner;
    /** When the hold was made ({@link System#nanoTime()}): its node is watched from a little after. */
    final long grantedAtNanos = System.nanoTime();

    final AtomicInteger entries = new AtomicInteger(1);
    private final AtomicReference<LeaseLoss> loss = new AtomicReference<>();
    /** The ZooKeeper handle of the session that owns the node; null if it was already gone at registration. */
    private volatile ZooKeeper owningHandle;
    // Curator's connected flag was false at registration while the owning handle was connected: the flag is
    // stale (docs/locks.md, the known Curator issue after an expiry), and this hold's checks read the handle only,
    // until a check finds the flag true again (the handle reconnected and Curator wrote it)
    private volatile boolean staleConnectedFlag;

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

    @Override
    public LeaseLoss loss() {
        return loss.get();
    }

    @Override
    public long token() {
        return token;
    }

    @Override
    public String path() {
        return lock.path();
    }

    @Override
    public Thread owner() {
        return owner;
    }

    @Override
    public boolean isValid() {
        return lock.isValid(this);
    }

    @Override
    public boolean verify() {
        return lock.verify(this);
    }

    /** @throws IllegalStateException on another thread than the owner (a lease's close checks it first) */
    @Override
    public void exit() {
        LeaseHold.requireOwner(this);
        lock.exit(this);
    }

    /** Ends a term without telling the listener: the participant let go. */
    void stepDown() {
        invalidate(LeaseLoss.STEPPED_DOWN);
    }

    void ownedBy(ZooKeeper handle, boolean staleConnectedFlag) {
        this.staleConnectedFlag = staleConnectedFlag;
        owningHandle = handle;
    }

    boolean staleConnectedFlag() {
        return staleConnectedFlag;
    }

    /** A check found Curator's flag true: it is live again, and this hold's checks read it from now on. */
    void connectedFlagRecovered() {
        staleConnectedFlag = false;
    }

    ZooKeeper owningHandle() {
        return owningHandle;
    }
}
