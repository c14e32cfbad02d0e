package dev.fencing.spring.internal;

import dev.fencing.lock.Lease;
import java.util.List;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.transaction.ConfigurableTransactionManager;
import org.springframework.transaction.TransactionExecution;
import org.springframework.transaction.TransactionExecutionListener;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Rolls back, at its commit, a transaction begun under locks this thread holds ({@code @FencedLocked} methods,
 * ShedLock jobs) once one of their leases is known lost: the commit throws {@link
 * dev.fencing.lock.LeaseLostException} and the transaction manager rolls the transaction back. What it wrote was
 * accepted by the fence when it was written, but a holder granted since may have read the rows before this commit
 * and write what it computed from them after it, with a greater token the fence accepts: that update would be
 * lost. A lease lost in a pause between this check and the commit still commits; nothing local can close that.
 *
 * <p>Added as a listener to every transaction manager of the context that takes listeners ({@link
 * ConfigurableTransactionManager}: Spring's own, the application's too). A transaction begun before the lock was
 * taken is checked by {@link ReleaseAfterTransaction}, which also holds the lock until that transaction ends.
 * Read-only transactions are not checked.
 */
public final class LeasesCheckedAtCommit implements TransactionExecutionListener {
    /** Adds the listener to each transaction manager bean, once. */
    public static BeanPostProcessor addToTransactionManagers() {
        LeasesCheckedAtCommit listener = new LeasesCheckedAtCommit();
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof ConfigurableTransactionManager manager
                        && manager.getTransactionExecutionListeners().stream()
                                .noneMatch(LeasesCheckedAtCommit.class::isInstance)) {
                    manager.addListener(listener);
                }
                return bean;
            }
        };
    }

    private LeasesCheckedAtCommit() {}

    @Override
    public void afterBegin(TransactionExecution transaction, Throwable beginFailure) {
        ReleaseAfterTransaction.closeHandedBack();
        if (beginFailure != null
                || transaction.isReadOnly()
                || !TransactionSynchronizationManager.isSynchronizationActive()) {
            return;
        }
        List<Lease> held = RunningLeases.all();
        if (!held.isEmpty()) {
            TransactionSynchronizationManager.registerSynchronization(new CommitCheck(held));
        }
    }

    /**
     * Throws {@link dev.fencing.lock.LeaseLostException} before a commit, for the first of its leases known lost,
     * unless the transaction is read-only: the transaction manager then rolls the transaction back.
     */
    static class CommitCheck implements TransactionSynchronization {
        private final List<Lease> leases;

        CommitCheck(List<Lease> leases) {
            this.leases = leases;
        }

        @Override
        public void beforeCommit(boolean readOnly) {
            if (readOnly) {
                return;
            }
            for (Lease lease : leases) {
                lease.ensureValid();
            }
        }
    }
}
