package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.HeldLease;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the listener of holds that were marked invalid: on the calling thread, or, for events found by the
 * client's own threads (keep-alives, watches, the pause detector), on a thread of its own, one call after another
 * in the order the holds were marked, so that a slow listener holds up neither. Only granted holds are told of:
 * a contender's hold has no lease a listener could know.
 */
final class LossNotifier {
    private static final Logger LOG = LoggerFactory.getLogger(LossNotifier.class);

    private final FencedLockListener listener;
    private final Predicate<EtcdHold> granted;
    /** Its one thread ends when idle. */
    private final ThreadPoolExecutor thread;

    LossNotifier(FencedLockListener listener, Predicate<EtcdHold> granted) {
        this.listener = listener;
        this.granted = granted;
        this.thread = new ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "fenced-lock-listener");
            thread.setDaemon(true);
            return thread;
        });
        thread.allowCoreThreadTimeOut(true);
    }

    void tell(EtcdHold hold, LeaseLoss cause) {
        if (!granted.test(hold)) {
            return;
        }
        try {
            listener.leaseInvalidated(new HeldLease(hold, true), cause);
        } catch (RuntimeException e) {
            LOG.error("lease listener failed for {} token {}", hold.path, hold.token, e);
        }
    }

    void tellAll(List<EtcdHold> marked, LeaseLoss cause) {
        for (EtcdHold hold : marked) {
            tell(hold, cause);
        }
    }

    void tellLater(List<EtcdHold> marked, LeaseLoss cause) {
        if (marked.isEmpty()) {
            return;
        }
        try {
            thread.execute(() -> tellAll(marked, cause));
        } catch (RejectedExecutionException closedMeanwhile) {
            tellAll(marked, cause);
        }
    }

    /** What is queued is still told. */
    void close() {
        thread.shutdown();
    }
}
