package dev.fencing.lock.spi;

import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;

/** A term, for every backend: the leader's lease on the election's lock, seen through {@link Leadership}. */
public final class HeldLeadership implements Leadership {
    private final HeldLease lease;
    private final String participantId;

    /**
     * @param lease the leader's lease (a backend may give a view, whose close does nothing, and end the term on
     *     its own)
     * @param participantId the leader's id
     */
    public HeldLeadership(HeldLease lease, String participantId) {
        this.lease = lease;
        this.participantId = participantId;
    }

    /** The leader's lease, for the backend that made the term: the participant alone closes it. */
    public HeldLease lease() {
        return lease;
    }

    @Override
    public long token() {
        return lease.token();
    }

    @Override
    public String path() {
        return lease.path();
    }

    @Override
    public String participantId() {
        return participantId;
    }

    @Override
    public boolean isValid() {
        return lease.isValid();
    }

    @Override
    public void ensureValid() {
        lease.ensureValid();
    }

    @Override
    public boolean verify() {
        return lease.verify();
    }

    @Override
    public LeaseLoss lossCause() {
        return lease.lossCause();
    }

    /** Says what is known without checking (a check may tell the listener): a term shown valid may not be. */
    @Override
    public String toString() {
        LeaseLoss loss = lease.hold().loss();
        return "Leadership[" + path() + ", participant " + participantId + ", token " + token()
                + (loss == null ? "" : ", ended: " + loss) + "]";
    }
}
