package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease handed out by one acquire; re-entrant acquires share the hold but not the closed flag. A view
 * (what a listener is given) cannot be closed, and reads as its hold does: invalid once the holder's last
 * lease closed, which marks the hold {@link LeaseLoss#RELEASED}.
 */
final class DefaultLease implements Lease {
    private final Hold hold;
    private final boolean view;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Why the lease is invalid as of its close: set before {@link #closed}, read after it. */
    private volatile LeaseLoss causeAtClose;

    DefaultLease(Hold hold, boolean view) {
        this.hold = hold;
        this.view = view;
    }

    Hold hold() {
        return hold;
    }

    @Override
    public long token() {
        return hold.token;
    }

    @Override
    public String path() {
        return hold.lock.path();
    }

    @Override
    public boolean isValid() {
        // close() sets the flag before it returns, so a check that begins after close() sees it
        return !closed.get() && hold.lock.isValid(hold);
    }

    @Override
    public void ensureValid() {
        if (!isValid()) {
            throw new LeaseLostException(path(), token(), lossCause());
        }
    }

    @Override
    public boolean verify() {
        return hold.lock.verify(hold);
    }

    @Override
    public LeaseLoss lossCause() {
        return closed.get() ? causeAtClose : holdLoss();
    }

    /** The hold's loss, after a check that may find one (a pause, a closed session); null while valid. */
    private LeaseLoss holdLoss() {
        return hold.lock.isValid(hold) ? null : hold.loss();
    }

    @Override
    public void close() {
        if (view || closed.get()) {
            return;
        }
        if (Thread.currentThread() != hold.owner) {
            throw new IllegalStateException("lease on " + path() + " with fence token " + token()
                    + " must be closed by the thread that acquired it ('" + hold.owner.getName() + "')");
        }
        // the owner thread alone closes, so the cause is set before anyone can see the flag
        LeaseLoss loss = holdLoss();
        causeAtClose = loss != null ? loss : LeaseLoss.RELEASED;
        if (closed.compareAndSet(false, true)) {
            hold.lock.exit(hold);
        }
    }

    /** Says what is known without checking (a check may tell the listener): a lease shown valid may not be. */
    @Override
    public String toString() {
        LeaseLoss loss = closed.get() ? causeAtClose : hold.loss();
        return "Lease[" + path() + ", token=" + token() + (loss == null ? ", valid" : ", lost: " + loss) + "]";
    }
}
