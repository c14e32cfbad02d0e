package dev.fencing.spring;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.zookeeper.TokenSource;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method under a {@link FencedLock} and hands it the grant: a parameter of type {@link
 * Lease} receives the lease, a {@code long} parameter annotated {@link FenceToken} receives its token, and
 * {@link CurrentLease} reads both on the method's thread (for a method without parameters). Send that token with every write the method makes; a resource guarded by {@code fencing-jdbc} or {@code
 * fencing-kafka} refuses it once a later holder's token has been accepted.
 *
 * <pre>{@code
 * @FencedLocked("/locks/inventory/#{#sku}")
 * public WriteOutcome reserve(String sku, int qty, @FenceToken long token) {
 *     return writer.tryUpdate(reserveUpdate(sku, qty), token);
 * }
 * // a caller: reservations.reserve("A-1", 3, 0); the token argument is filled in by the lock
 * }</pre>
 *
 * <p><b>The lock service</b> is the application's {@link LockService}: ZooKeeper's {@code FencedLocks} or etcd's
 * {@code EtcdLocks} ({@code fencing.lock-service}); the same method runs on either. On ZooKeeper the token source is
 * {@code fencing.locks.token-source} (the {@code FencedLocks} bean's default) unless the annotation names one with
 * {@link #tokenSource()}; on etcd the token is the create revision of the holder's key, and a token source named
 * here is refused.
 *
 * <p><b>The lock path</b> is a template: text, with SpEL expressions in {@code #{...}} that see the method's
 * arguments by name ({@code #sku}; compile with {@code -parameters}, as Spring Boot's build plugins do) or by
 * position ({@code #p0}, {@code #a0}). The evaluated path must be a valid lock path ({@code /a/b}, as {@link
 * LockService} says); a bad one is refused before anything is locked, with an {@link IllegalArgumentException}
 * naming it.
 *
 * <p><b>Arguments.</b> The caller passes {@code null} for the {@link Lease} parameter and {@code 0} for the
 * {@link FenceToken} parameter; they are replaced before the method runs. Anything else is refused with an
 * {@link IllegalArgumentException}: a token must come from this lock's grant, never from the caller.
 *
 * <p><b>Acquiring.</b> The call blocks until the lock is granted, or, with {@link #timeout()}, fails with
 * {@link LockTimeoutException} when the timeout passes. A lease that is already invalid when granted
 * (the connection was suspended meanwhile) is refused with {@link LeaseLostException} and the method does
 * not run. The lease is released when the method returns or throws, on the calling thread. Re-entry on the
 * same thread and path gets the same token. Locks belong to threads: the method must not hand its writes to
 * other threads (an {@code @Async} method runs under the lock of the thread that runs it).
 *
 * <p><b>Skipping instead of waiting</b> ({@link #skipIfLocked()}), for a {@code @Scheduled} job that runs on
 * several instances and must run on one at a time:
 *
 * <pre>{@code
 * @Scheduled(fixedDelay = 60_000)
 * @FencedLocked(value = "/locks/jobs/cleanup", skipIfLocked = true)
 * public void cleanup() {
 *     writer.update(cleanupRow(), CurrentLease.token()); // runs where the lock was free; elsewhere, skipped
 * }
 * }</pre>
 *
 * When another holder has the lock, the method does not run: a {@code void} method returns, a method
 * returning {@link java.util.Optional} returns {@code Optional.empty()}; other return types are refused when
 * the method is first called. Each skip is logged at DEBUG (method, path) and counted ({@code
 * fencing.locked.skipped}, tagged {@code method}, with Micrometer). Without {@link #timeout()} the lock gets
 * one attempt (on ZooKeeper the contender's node is created, and deleted again unless it is first; on etcd its
 * lease, key and predecessor read are made once, bounded by etcd's request timeout); with one, the call waits at
 * most that long for a holder and then skips instead of throwing. Skipping is not a
 * once-per-tick guarantee: an instance whose tick comes after another instance's run has finished gets the
 * lock and runs again. A run's token is greater than every earlier run's, so a run that outlived its lease
 * (a pause, an expired session) has its late writes refused by a fenced resource once the next run wrote.
 *
 * <p><b>Lock loss while the method runs.</b> The method keeps running: a lock service cannot stop a
 * paused thread, and stopping it from here would leave its writes half done. What protects the resource is
 * the token: every write the method makes after another holder's write under a greater token is refused by
 * the resource ({@code WriteOutcome.Rejected}, {@code StaleFenceException}). The method can see the loss
 * early through the injected {@link Lease} ({@code isValid()}, {@code ensureValid()}, {@code lossCause()})
 * and should stop writing; with {@link #interruptOnLoss()} the thread is also interrupted, which ends
 * blocking waits (interruptible I/O, {@code Thread.sleep}, queues) early; an interrupt caused this way is
 * cleared when the method returns, so it does not reach the caller's thread afterwards. When a method returns after its
 * lease was lost, its result is returned as it is and a WARN names the path, token and cause: whatever it
 * wrote under a stale token was refused, whatever it wrote before that is committed. Each loss is also told
 * to every {@code FencedLockListener} bean.
 *
 * <p><b>With the application's own {@code FencedLocks} or {@code EtcdLocks} bean</b>, {@link #interruptOnLoss()}
 * does nothing: the starter hears of lost leases only through the listener it gives the locks it builds itself,
 * and cannot add one to a bean already built (nor do {@code FencedLockListener} beans and the lease meters hear
 * anything then). To adjust the locks and keep these, declare a {@link FencedLocksCustomizer} or {@link
 * EtcdLocksCustomizer} bean instead.
 *
 * <p><b>Proxies.</b> Like {@code @Transactional}, the lock is taken by the bean's Spring proxy: a call from
 * the bean to its own method bypasses it. Such a call's token parameter stays {@code 0}, which every fenced
 * resource refuses, so the mistake fails closed.
 *
 * <p><b>No locks, no start.</b> A bean with such a method in an application without a {@link LockService} (no
 * {@code fencing.zookeeper.connect-string} nor {@code fencing.etcd.endpoints}, {@code fencing.zookeeper.enabled=false},
 * two Curator clients) fails the application's start with an {@link IllegalStateException} naming the method. With {@code
 * fencing.locked.enabled=false} the annotation is ignored and the method runs <b>without any lock</b>.
 *
 * <p><b>Transactions.</b> The lock is taken outside a {@code @Transactional} method's transaction (the
 * lock's advisor has a higher precedence than the transaction advisor's default), so the transaction
 * commits before the lock is released. Called inside a transaction that is already running (the caller's
 * {@code @Transactional} or {@code TransactionTemplate}, an enclosing locked method's transaction), the method's
 * writes commit with that transaction, so its lock is held until that transaction has completed: released at its
 * return, the next holder would read the state from before the write and overwrite it after the commit with a
 * greater token, which the fence accepts.
 *
 * <p><b>Interfaces.</b> The annotation and {@link FenceToken} may be declared on an interface method the bean
 * implements; a {@code @FenceToken} there is honoured as on the implementation.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FencedLocked {

    /** The lock path template, for example {@code "/locks/inventory/#{#sku}"}. */
    String value();

    /**
     * The lock's token source on ZooKeeper, written {@code tokenSource = TokenSource.ZXID}; all users of one path
     * must pick the same. Refused on etcd (when the method is first called), whose token is the key's create
     * revision. Empty (the default) means the {@code FencedLocks} bean's default: for the starter's, {@code
     * fencing.locks.token-source} ({@code sequence} unless set). At most one; more are refused when the method
     * is first called, with an {@link IllegalStateException} naming it.
     */
    TokenSource[] tokenSource() default {};

    /**
     * How long to wait for the lock, in Spring Boot's duration format ({@code 500ms}, {@code 10s}, {@code
     * PT1M}); empty (the default) waits as long as it takes.
     */
    String timeout() default "";

    /**
     * Also interrupt the method's thread when its lease is invalidated; default {@code false}. Works with the
     * starter's {@code FencedLocks} or {@code EtcdLocks} only, not with an application's own bean (see above).
     */
    boolean interruptOnLoss() default false;

    /**
     * When another holder has the lock, skip the call instead of waiting for it; default {@code false}. The
     * method must return {@code void} (the call does nothing) or {@link java.util.Optional} (the call returns
     * {@code Optional.empty()}). Without {@link #timeout()} the lock gets one attempt; with one, the call
     * waits at most that long before it skips. See "Skipping instead of waiting" above.
     */
    boolean skipIfLocked() default false;
}
