package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;

/** One term: the participant's hold of the election's lock, read as a lease's is. */
final class EtcdLeadership implements Leadership {
    private final EtcdHold hold;
    private final String participantId;

    EtcdLeadership(EtcdHold hold, String participantId) {
        this.hold = hold;
        this.participantId = participantId;
    }

    EtcdHold hold() {
        return hold;
    }

    @Override
    public String participantId() {
        return participantId;
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
        return hold.registry.isValid(hold);
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
        return isValid() ? null : hold.loss();
    }

    @Override
    public String toString() {
        LeaseLoss loss = hold.loss();
        return "Leadership[" + path() + ", " + participantId + ", token=" + token()
                + (loss == null ? ", valid" : ", ended: " + loss) + "]";
    }
}
