package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.HeldLease;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the listener of holds that were marked invalid on a thread of its own, one call after another in the order the
 * losses were claimed (at the mark, or at the grant of a hold marked before it), so that a slow listener holds up
 * neither the client's threads (keep-alives, watches, the pause detector) nor the holder's (a loss its own check
 * found); only the close of the locks tells on the calling thread. Only granted holds are told of (a contender's hold
 * has no lease a listener could know), each once: {@code claim} picks them.
 */
final class LossNotifier {
    private static final Logger LOG = LoggerFactory.getLogger(LossNotifier.class);

    private final FencedLockListener listener;
    /** Whether a marked hold is to be told of by this call; true once per hold, and claims it. */
    private final Predicate<EtcdHold> claim;
    /**
     * Its one thread ends when idle, and it is never shut down: a loss found after the locks closed (an acquire
     * that took up its grant as they closed) is still told on it, not on the thread that found it, the holder's.
     */
    private final ThreadPoolExecutor thread;

    LossNotifier(FencedLockListener listener, Predicate<EtcdHold> claim) {
        this.listener = listener;
        this.claim = claim;
        this.thread = new ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "fenced-lock-listener");
            thread.setDaemon(true);
            return thread;
        });
        thread.allowCoreThreadTimeOut(true);
    }

    /**
     * Whatever the listener throws, an {@link Error} included, is logged here: thrown on, it would leave the other
     * leases of the event untold, and end the close of the locks before it closed the elections (see {@link
     * FencedLockListener} for why not even a {@link VirtualMachineError} is thrown on).
     */
    private void tell(EtcdHold hold, LeaseLoss cause) {
        try {
            listener.leaseInvalidated(new HeldLease(hold, true), cause);
        } catch (Throwable e) {
            LOG.error("lease listener failed for {} token {}", hold.path, hold.token, e);
        }
    }

    /** Tells now, on the calling thread, of those of the holds that are granted and not told of yet. */
    void tellAll(List<EtcdHold> marked, LeaseLoss cause) {
        for (EtcdHold hold : claimed(marked)) {
            tell(hold, cause);
        }
    }

    /**
     * Tells on the listener's thread of those of the holds that are granted now, and not told of yet: by the time
     * the thread tells, a holder that found the loss itself may have closed its lease, and it is told all the same.
     */
    void tellLater(List<EtcdHold> marked, LeaseLoss cause) {
        List<EtcdHold> told = claimed(marked);
        if (told.isEmpty()) {
            return;
        }
        thread.execute(() -> told.forEach(hold -> tell(hold, cause)));
    }

    private List<EtcdHold> claimed(List<EtcdHold> marked) {
        List<EtcdHold> told = new ArrayList<>(marked.size());
        for (EtcdHold hold : marked) {
            if (claim.test(hold)) {
                told.add(hold);
            }
        }
        return told;
    }
}
