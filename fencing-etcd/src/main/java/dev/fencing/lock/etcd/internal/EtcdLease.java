package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease handed out by one acquire; re-entrant acquires share the hold but not the closed flag. A view (what a
 * listener is given) cannot be closed and reads as its hold does.
 */
final class EtcdLease implements Lease {
    private final EtcdHold hold;
    private final boolean view;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Why the lease is invalid as of its close: set before {@link #closed}, read after it. */
    private volatile LeaseLoss causeAtClose;

    EtcdLease(EtcdHold hold, boolean view) {
        this.hold = hold;
        this.view = view;
    }

    EtcdHold hold() {
        return hold;
    }

    @Override
    public long token() {
        return hold.token;
    }

    @Override
    public String path() {
        return hold.path;
    }

    @Override
    public boolean isValid() {
        // close() sets the flag before it returns, so a check that begins after close() sees it
        return !closed.get() && hold.registry.isValid(hold);
    }

    @Override
    public void ensureValid() {
        if (!isValid()) {
            throw new LeaseLostException(path(), token(), lossCause());
        }
    }

    @Override
    public boolean verify() {
        return hold.registry.verify(hold);
    }

    @Override
    public LeaseLoss lossCause() {
        return closed.get() ? causeAtClose : holdLoss();
    }

    private LeaseLoss holdLoss() {
        return hold.registry.isValid(hold) ? null : hold.loss();
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
            hold.registry.exit(hold);
        }
    }

    /** Says what is known without checking: a lease shown valid may not be. */
    @Override
    public String toString() {
        LeaseLoss loss = closed.get() ? causeAtClose : hold.loss();
        return "Lease[" + path() + ", token=" + token() + ", key=" + hold.key
                + (loss == null ? ", valid" : ", lost: " + loss) + "]";
    }
}
