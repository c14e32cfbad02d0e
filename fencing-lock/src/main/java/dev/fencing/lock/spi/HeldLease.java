package dev.fencing.lock.spi;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease handed out by one acquire, for every backend; re-entrant acquires share the hold but not the closed
 * flag. A view (what a listener is given) cannot be closed, and reads as its hold does: invalid once the
 * holder's last lease closed, which marks the hold {@link LeaseLoss#RELEASED}.
 */
public final class HeldLease implements Lease {
    private final LeaseHold hold;
    private final boolean view;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Why the lease is invalid as of its close: set before {@link #closed}, read after it. */
    private volatile LeaseLoss causeAtClose;

    /**
     * @param hold the backend's hold
     * @param view true for a lease that only reads the hold (a listener's, a leadership's): its close does nothing
     */
    public HeldLease(LeaseHold hold, boolean view) {
        this.hold = hold;
        this.view = view;
    }

    /** The hold behind this lease. */
    public LeaseHold hold() {
        return hold;
    }

    @Override
    public long token() {
        return hold.token();
    }

    @Override
    public String path() {
        return hold.path();
    }

    @Override
    public boolean isValid() {
        // close() sets the flag before it returns, so a check that begins after close() sees it
        return !closed.get() && hold.isValid();
    }

    @Override
    public void ensureValid() {
        if (!isValid()) {
            throw new LeaseLostException(path(), token(), lossCause());
        }
    }

    /** False once this lease was closed, as {@link #isValid()}, even while a re-entrant lease keeps its hold. */
    @Override
    public boolean verify() {
        return !closed.get() && hold.verify();
    }

    @Override
    public LeaseLoss lossCause() {
        return closed.get() ? causeAtClose : holdLoss();
    }

    /** The hold's loss, after a check that may find one (a pause, a closed session); null while valid. */
    private LeaseLoss holdLoss() {
        return hold.isValid() ? null : hold.loss();
    }

    /**
     * Releases the lease; its hold once its owner's last lease closed.
     *
     * @throws IllegalStateException on another thread than the one that acquired it
     */
    @Override
    public void close() {
        if (view || closed.get()) {
            return;
        }
        if (Thread.currentThread() != hold.owner()) {
            throw new IllegalStateException("lease on " + path() + " with fence token " + token()
                    + " must be closed by the thread that acquired it ('"
                    + hold.owner().getName() + "')");
        }
        // the owner thread alone closes, so the cause is set before anyone can see the flag
        LeaseLoss loss = holdLoss();
        causeAtClose = loss != null ? loss : LeaseLoss.RELEASED;
        if (closed.compareAndSet(false, true)) {
            hold.exit();
        }
    }

    /** Says what is known without checking (a check may tell the listener): a lease shown valid may not be. */
    @Override
    public String toString() {
        LeaseLoss loss = closed.get() ? causeAtClose : hold.loss();
        return "Lease[" + path() + ", token=" + token() + (loss == null ? ", valid" : ", lost: " + loss) + "]";
    }
}
