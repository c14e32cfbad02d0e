package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;

/** A term: the leader's lease on the election path, seen through {@link Leadership}. */
final class DefaultLeadership implements Leadership {
    private final DefaultLease lease;
    private final String participantId;

    DefaultLeadership(DefaultLease lease, String participantId) {
        this.lease = lease;
        this.participantId = participantId;
    }

    DefaultLease lease() {
        return lease;
    }

    /** Ends the term without telling the listener: the participant let go. */
    void stepDown() {
        lease.hold().invalidate(LeaseLoss.STEPPED_DOWN);
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

    @Override
    public String toString() {
        return "Leadership[" + path() + ", participant " + participantId + ", token " + token()
                + (isValid() ? "" : ", ended: " + lossCause()) + "]";
    }
}
