package dev.fencing.spring.internal;

import dev.fencing.lock.Lease;
import java.util.List;
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
 */
public final class ReleaseAfterTransaction {
    private static final Logger LOG = LoggerFactory.getLogger(ReleaseAfterTransaction.class);

    private static final boolean SPRING_TX = ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            ReleaseAfterTransaction.class.getClassLoader());

    private ReleaseAfterTransaction() {}

    /** Closes {@code lease} now, or when the transaction running on this thread has completed. */
    public static void close(Lease lease) {
        if (SPRING_TX && Synchronizations.closeAfterCompletion(lease)) {
            return;
        }
        lease.close();
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
            // what the method wrote must not commit once its lease is known lost, as LeasesCheckedAtCommit checks
            TransactionSynchronizationManager.registerSynchronization(
                    new LeasesCheckedAtCommit.CommitCheck(List.of(lease)) {
                        @Override
                        public void afterCompletion(int status) {
                            lease.close();
                        }
                    });
            return true;
        }
    }
}
