package dev.fencing.lock.internal;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import java.util.concurrent.atomic.AtomicBoolean;

/** A lease handed out by one acquire; re-entrant acquires share the hold but not the closed flag. */
final class DefaultLease implements Lease {
    private final Hold hold;
    private final AtomicBoolean closed;

    DefaultLease(Hold hold, boolean viewOnly) {
        this.hold = hold;
        this.closed = new AtomicBoolean(viewOnly);
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
        return hold.lock.isValid(hold);
    }

    @Override
    public void ensureValid() {
        if (!isValid()) {
            throw new LeaseLostException(path(), token(), hold.loss());
        }
    }

    @Override
    public boolean verify() {
        return hold.lock.verify(hold);
    }

    @Override
    public LeaseLoss lossCause() {
        isValid();
        return hold.loss();
    }

    @Override
    public void close() {
        if (closed.get()) {
            return;
        }
        if (Thread.currentThread() != hold.owner) {
            throw new IllegalStateException("lease on " + path() + " with fence token " + token()
                    + " must be closed by the thread that acquired it ('" + hold.owner.getName() + "')");
        }
        if (closed.compareAndSet(false, true)) {
            hold.lock.exit(hold);
        }
    }

    @Override
    public String toString() {
        LeaseLoss loss = hold.loss();
        return "Lease[" + path() + ", token=" + token() + (loss == null ? ", valid" : ", lost: " + loss) + "]";
    }
}
