package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.OneAttempt;
import dev.fencing.testsupport.ZooKeeperServers;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationUtils;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A {@code @FencedLocked} method called in a transaction that Spring only takes part in and that another thread
 * completes, on the shared real ZooKeeper. A JTA transaction begun by a container or a {@code UserTransaction} is rolled
 * back by the transaction manager's reaper thread at its timeout (or completed asynchronously), and Spring's {@code
 * JtaTransactionManager} hands the after-completion callbacks of the scope that took part to that transaction, which
 * runs them on the completing thread. {@link OutsideTransactions} does the same without a JTA server, and the test
 * completes the transaction on a thread of its own, after the scope has ended: the interleaving of a timeout.
 *
 * <p>The lock was taken inside the running transaction, so the starter holds it until the transaction completes; the
 * completing thread cannot release it (a lease is released by the thread that took it).
 */
class TransactionCompletedOnAnotherThreadIT {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingZooKeeperAutoConfiguration.class, FencingLockedMethodsAutoConfiguration.class))
            .withPropertyValues("fencing.zookeeper.connect-string="
                    + ZooKeeperServers.shared().connectString())
            .withUserConfiguration(Service.class);

    /**
     * Rolled back by a reaper thread: the lock must not stay held by the thread that took it, and that thread's next
     * call of the same lock must not re-enter the old grant (its token) as though it still held it for that call.
     */
    @Test
    void aLockWhoseTransactionAReaperThreadRolledBackIsReleasedBeforeItsHoldersNextCallTakesIt() {
        runner.run(context -> {
            Job job = context.getBean(Job.class);
            LockService locks = context.getBean(LockService.class);
            String path = "/locks/other-thread-it/reaped";

            Lease first = inTransactionCompletedBy(
                    "reaper", context.getBean(PlatformTransactionManager.class), () -> job.run("reaped"));
            Lease next = job.run("reaped"); // the holder's next call of the same lock, outside any transaction

            assertThat(next.token())
                    .as("the next call re-entered the grant (token %s) the rolled-back transaction held", first.token())
                    .isGreaterThan(first.token());
            assertThat(first.lossCause()).as("the first grant's lease").isEqualTo(LeaseLoss.RELEASED);
            Optional<Lease> other = otherThreadTries(locks, path);
            assertThat(other)
                    .as("another holder's attempt after the holder's next call returned")
                    .isPresent();
        });
    }

    /** The same, released when the holding thread begins its next transaction (a pooled thread's next request). */
    @Test
    void aLockWhoseTransactionAnotherThreadCommittedIsReleasedWhenItsHolderBeginsATransaction() {
        runner.run(context -> {
            Job job = context.getBean(Job.class);
            LockService locks = context.getBean(LockService.class);
            PlatformTransactionManager transactions = context.getBean(PlatformTransactionManager.class);
            String path = "/locks/other-thread-it/committed";

            Lease first = inTransactionCompletedBy("completion", transactions, () -> job.run("committed"));
            new TransactionTemplate(transactions).executeWithoutResult(status -> {});

            assertThat(first.lossCause())
                    .as("the lease of the transaction another thread completed")
                    .isEqualTo(LeaseLoss.RELEASED);
            assertThat(otherThreadTries(locks, path))
                    .as("another holder's attempt once the holding thread began a transaction")
                    .isPresent();
        });
    }

    /**
     * Runs {@code work} in a Spring scope taking part in a transaction begun outside Spring, then ends the scope, then
     * completes the transaction on a thread named {@code completer} (rolled back for "reaper", committed otherwise),
     * and returns what the work returned. Checks that the lock is held between the scope's end and the completion.
     */
    private static Lease inTransactionCompletedBy(
            String completer, PlatformTransactionManager transactions, java.util.function.Supplier<Lease> work)
            throws InterruptedException {
        OutsideTransactions.Outer outer = OutsideTransactions.beginOutside();
        Lease lease;
        try {
            lease = new TransactionTemplate(transactions).execute(status -> work.get());
        } finally {
            OutsideTransactions.leave();
        }
        assertThat(lease.isValid())
                .as("the lock of the method that ran in the transaction, before the transaction completed")
                .isTrue();
        int status = completer.equals("reaper")
                ? TransactionSynchronization.STATUS_ROLLED_BACK
                : TransactionSynchronization.STATUS_COMMITTED;
        Thread completing = new Thread(() -> outer.complete(status), completer);
        completing.start();
        completing.join(30_000);
        assertThat(completing.isAlive()).as("the completing thread ended").isFalse();
        return lease;
    }

    private static Optional<Lease> otherThreadTries(LockService locks, String path) {
        CompletableFuture<Optional<Lease>> tried = new CompletableFuture<>();
        Thread other = new Thread(() -> {
            try {
                Optional<Lease> got = locks.lock(path).tryAcquire(OneAttempt.WAIT);
                got.ifPresent(Lease::close); // released by the thread that took it; the token stays readable
                tried.complete(got);
            } catch (Throwable e) {
                tried.completeExceptionally(e);
            }
        });
        other.start();
        try {
            return tried.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Service {
        @Bean
        PlatformTransactionManager transactionManager() {
            return new OutsideTransactions();
        }

        @Bean
        Job job() {
            return new Job();
        }
    }

    public static class Job {
        /** Returns its lease (closed by the starter once the method and its transaction are done). */
        @FencedLocked("/locks/other-thread-it/#{#name}")
        public Lease run(String name) {
            return CurrentLease.get().orElseThrow();
        }
    }

    /**
     * Transactions begun outside Spring (as by a JTA container), in which Spring's scopes take part; their
     * after-completion callbacks are handed to the outer transaction, as {@code JtaTransactionManager} registers them
     * with the JTA transaction, and run on the thread that completes it. A transaction Spring begins itself has no
     * resource.
     */
    static final class OutsideTransactions extends AbstractPlatformTransactionManager {
        private static final ThreadLocal<Outer> CURRENT = new ThreadLocal<>();

        /** A transaction begun outside Spring, completed by whichever thread calls {@link #complete}. */
        static final class Outer {
            private final List<TransactionSynchronization> afterCompletion = new ArrayList<>();

            synchronized void complete(int status) {
                TransactionSynchronizationUtils.invokeAfterCompletion(afterCompletion, status);
            }

            synchronized void register(List<TransactionSynchronization> synchronizations) {
                afterCompletion.addAll(synchronizations);
            }
        }

        /** Begins a transaction on this thread outside Spring. */
        static Outer beginOutside() {
            Outer outer = new Outer();
            CURRENT.set(outer);
            return outer;
        }

        /** This thread leaves the transaction begun outside Spring (it goes on elsewhere). */
        static void leave() {
            CURRENT.remove();
        }

        private record Scope(Outer outer) {}

        @Override
        protected Object doGetTransaction() {
            return new Scope(CURRENT.get());
        }

        @Override
        protected boolean isExistingTransaction(Object transaction) {
            return ((Scope) transaction).outer() != null;
        }

        @Override
        protected void doBegin(Object transaction, TransactionDefinition definition) {}

        @Override
        protected void doCommit(DefaultTransactionStatus status) {}

        @Override
        protected void doRollback(DefaultTransactionStatus status) {}

        @Override
        protected void registerAfterCompletionWithExistingTransaction(
                Object transaction, List<TransactionSynchronization> synchronizations) {
            ((Scope) transaction).outer().register(synchronizations);
        }
    }
}
