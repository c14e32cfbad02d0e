package dev.fencing.spring.internal;

import static org.springframework.transaction.support.TransactionSynchronization.STATUS_COMMITTED;
import static org.springframework.transaction.support.TransactionSynchronization.STATUS_ROLLED_BACK;

import dev.fencing.lock.Lease;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.ClassUtils;

/**
 * Releases the lease of a locked method or job that returns inside a Spring transaction which was already running
 * when the lock was taken (the caller's {@code @Transactional}, a {@code TransactionTemplate}, an enclosing locked
 * {@code @Transactional} method of another lock): what the method wrote commits only when that transaction does, and
 * until then the next holder would read the state from before the write and overwrite it once it committed, with a
 * greater token the fence accepts. So the lease is closed when that transaction has completed, committed or rolled
 * back, on the thread that completes it (the one that took the lock, with Spring's resource transaction managers).
 * Before that transaction commits, the lease is checked as {@link LeasesCheckedAtCommit} checks the leases a
 * transaction began under: known lost, the commit throws and the transaction is rolled back. Without spring-tx on the
 * class path, or outside a transaction, the lease is closed at once.
 *
 * <p><b>A transaction completed on another thread.</b> A JTA transaction manager hands the completion of a transaction
 * that Spring only took part in (one a container or a {@code UserTransaction} began) to that transaction, which may
 * complete on a thread of its own: a timeout's rollback on the transaction manager's reaper, an asynchronous
 * completion. A lease is released by the thread that took it only, so that thread cannot release it: the lease is
 * handed back to the thread that holds it, with a WARN naming the lock, the token and both threads, and that thread
 * releases it the next time it takes a lock of the starter (a locked method, a ShedLock job, a {@code
 * FencedLockRegistry} lock) or begins a transaction ({@link #closeHandedBack()}), before anything else: its next call
 * of the same lock gets a new grant with a greater token, never the old one again. Until then the lock stays held
 * (other holders wait; nothing is committed under it any more), and a thread that never comes back keeps it until
 * its session or lease on the lock service ends.
 *
 * <p>In such a transaction, the check before the commit runs when Spring's scope ends (Spring calls {@code
 * beforeCommit} then), not when the transaction that another party began commits: a lease lost in between is not
 * seen by the check.
 */
public final class ReleaseAfterTransaction {
    private static final Logger LOG = LoggerFactory.getLogger(ReleaseAfterTransaction.class);

    private static final boolean SPRING_TX = ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            ReleaseAfterTransaction.class.getClassLoader());

    /** Leases whose transaction completed on another thread, by the thread that holds them. */
    private static final Map<Thread, List<Lease>> HANDED_BACK = new ConcurrentHashMap<>();

    private ReleaseAfterTransaction() {}

    /** Closes {@code lease} now, or when the transaction running on this thread has completed. */
    public static void close(Lease lease) {
        closeHandedBack();
        if (SPRING_TX && Synchronizations.closeAfterCompletion(lease)) {
            return;
        }
        lease.close();
    }

    /**
     * Closes the leases of this thread whose transaction another thread completed: called where the starter runs on a
     * thread before it takes a lock or begins a transaction. Costs a read of an empty map when there are none.
     */
    public static void closeHandedBack() {
        if (HANDED_BACK.isEmpty()) {
            return;
        }
        List<Lease> leases = HANDED_BACK.remove(Thread.currentThread());
        if (leases == null) {
            return;
        }
        for (Lease lease : leases) {
            LOG.info(
                    "lock {} (token {}) released by thread {}, which holds it, after its transaction completed on"
                            + " another thread",
                    lease.path(),
                    lease.token(),
                    Thread.currentThread().getName());
            lease.close();
        }
    }

    /** On the thread that completed the transaction: {@code owner} releases the lease at its next call. */
    private static void handBack(Lease lease, Thread owner, String outcome) {
        // one atomic step per key: the owner removes the list whole, and a lease added after that starts a new one
        HANDED_BACK.compute(owner, (thread, leases) -> {
            List<Lease> handed = leases == null ? new ArrayList<>() : leases;
            handed.add(lease);
            return handed;
        });
        LOG.warn(
                "the transaction holding lock {} (token {}) completed ({}) on thread {}, not on thread {}, which holds"
                        + " the lock and alone can release it: the lock stays held until {} next takes a lock or"
                        + " begins a transaction{}",
                lease.path(),
                lease.token(),
                outcome,
                Thread.currentThread().getName(),
                owner.getName(),
                owner.getName(),
                owner.isAlive() ? "" : " (it has ended: until the session or lease on the lock service ends)");
    }

    /** Loaded only with spring-tx on the class path. */
    private static final class Synchronizations {
        static boolean closeAfterCompletion(Lease lease) {
            if (!TransactionSynchronizationManager.isSynchronizationActive()) {
                return false;
            }
            LOG.debug(
                    "lock {} (token {}) is held until the transaction running on thread {} completes",
                    lease.path(),
                    lease.token(),
                    Thread.currentThread().getName());
            Thread owner = Thread.currentThread();
            // what the method wrote must not commit once its lease is known lost, as LeasesCheckedAtCommit checks
            TransactionSynchronizationManager.registerSynchronization(
                    new LeasesCheckedAtCommit.CommitCheck(List.of(lease)) {
                        @Override
                        public void afterCompletion(int status) {
                            if (Thread.currentThread() == owner) {
                                lease.close();
                            } else {
                                // its close would throw here: not the owner
                                handBack(lease, owner, outcome(status));
                            }
                        }
                    });
            return true;
        }

        private static String outcome(int status) {
            return switch (status) {
                case STATUS_COMMITTED -> "committed";
                case STATUS_ROLLED_BACK -> "rolled back";
                default -> "outcome unknown";
            };
        }
    }
}
