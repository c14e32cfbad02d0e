package dev.fencing.spring.internal;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.spring.FencedLocked;
import dev.fencing.spring.LockService;
import dev.fencing.spring.LockTimeoutException;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.MethodClassKey;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Runs a {@link FencedLocked} method under its lock: evaluates the path, acquires, refuses a lease that is
 * invalid from the start, puts the lease and token into the method's arguments, runs it, and releases on
 * the same thread. Also a {@link FencedLockListener} (through the locks' listener), to interrupt methods
 * that asked for it when their lease is lost. Thread-safe.
 */
public final class FencedLockedInterceptor implements MethodInterceptor, FencedLockListener {
    private static final Logger LOG = LoggerFactory.getLogger(FencedLockedInterceptor.class);

    private final ObjectProvider<LockService> locks; // resolved at each call, not when proxies are made
    private final ObjectProvider<SkippedCalls> skips;
    private final Map<MethodClassKey, LockedMethod> methods = new ConcurrentHashMap<>();
    private final Map<Long, HeldLease> held = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    public FencedLockedInterceptor(ObjectProvider<LockService> locks) {
        this(locks, null);
    }

    /** With {@code skips}: every {@link SkippedCalls} bean hears of each skipped call. */
    public FencedLockedInterceptor(ObjectProvider<LockService> locks, ObjectProvider<SkippedCalls> skips) {
        this.locks = locks;
        this.skips = skips;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        LockedMethod locked = lockedMethod(invocation);
        Object[] arguments = invocation.getArguments();
        locked.requirePlaceholders(arguments);
        String path = locked.path(arguments);
        LockService unique = locks.getIfUnique();
        if (unique == null) {
            throw LockedMethodsCheck.noLocks(
                    locked.toString(), (int) locks.stream().count());
        }
        FencedLock lock = ZooKeeperLockService.lock(unique, path, locked.tokenSource, "@FencedLocked on " + locked);
        ReleaseAfterTransaction.closeHandedBack(); // before this thread re-enters a lock it should have released
        Lease lease;
        if (locked.skipIfLocked) {
            Optional<Lease> granted = lock.tryAcquire(locked.timeout == null ? OneAttempt.WAIT : locked.timeout);
            if (granted.isEmpty()) {
                LOG.debug("{} skipped: another holder has the lock on {}", locked, path);
                if (skips != null) {
                    skips.orderedStream().forEach(s -> tellSkipped(s, locked.toString(), path));
                }
                return locked.skippedResult();
            }
            lease = granted.get();
        } else {
            lease = locked.timeout == null
                    ? lock.acquire()
                    : lock.tryAcquire(locked.timeout).orElseThrow(() -> new LockTimeoutException(path, locked.timeout));
        }
        if (!lease.isValid()) {
            // disrupted between the lock node's creation and the grant: the method does not run
            try {
                lease.ensureValid();
            } finally {
                lease.close();
            }
        }
        long id = ids.incrementAndGet();
        HeldLease holding = new HeldLease(lease, locked, Thread.currentThread());
        try {
            locked.inject(arguments, lease);
            held.put(id, holding);
            if (locked.interruptOnLoss && !lease.isValid()) {
                // lost after the check above but before the listener could find it among the held leases
                holding.interrupt(lease.lossCause());
            }
            RunningLeases.push(lease);
            return invocation.proceed();
        } finally {
            RunningLeases.remove(lease);
            held.remove(id);
            finish(holding, held.values());
            if (!lease.isValid()) {
                LOG.warn(
                        "{} returned after its lease on {} (token {}) was lost ({}): fenced resources refuse what it"
                                + " wrote under that token after a later holder's writes",
                        locked,
                        path,
                        lease.token(),
                        lease.lossCause());
            }
            // inside a transaction that was running before the lock, the lock is held until that one completes
            ReleaseAfterTransaction.close(lease);
        }
    }

    /**
     * On the method's thread, once it returned: clears the interrupt this class caused it ({@link
     * HeldLease#finished}), then interrupts the thread again if an enclosing locked method of the same thread, still
     * in {@code stillHeld}, was interrupted too. Read after the clear, never before it: the listener may be
     * interrupting that method right now (it marks it, then interrupts the thread, both under its monitor), and a
     * mark read before the clear could miss it while the clear then swallowed its interrupt. Read after, either the
     * mark is seen here, or the listener's interrupt lands after the clear.
     */
    static void finish(HeldLease holding, Collection<HeldLease> stillHeld) {
        Thread me = Thread.currentThread();
        holding.finished();
        if (stillHeld.stream().anyMatch(h -> h.thread == me && h.wasInterrupted())) {
            me.interrupt();
        }
    }

    /** Test hook: runs in {@link HeldLease#finished} right before it clears an interrupt it caused. */
    static volatile Runnable beforeClear = () -> {};

    private LockedMethod lockedMethod(MethodInvocation invocation) {
        Method method = invocation.getMethod();
        Class<?> targetClass = invocation.getThis() == null ? null : AopUtils.getTargetClass(invocation.getThis());
        return methods.computeIfAbsent(new MethodClassKey(method, targetClass), key -> {
            Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
            FencedLocked annotation = AnnotatedElementUtils.findMergedAnnotation(specific, FencedLocked.class);
            if (annotation == null) {
                annotation = AnnotatedElementUtils.findMergedAnnotation(method, FencedLocked.class);
            }
            if (annotation == null) {
                throw new IllegalStateException("no @FencedLocked on " + LockedMethod.describe(specific));
            }
            return new LockedMethod(specific, annotation);
        });
    }

    /** Interrupts the methods that asked for it and run under the lost lease. */
    @Override
    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
        for (HeldLease h : held.values()) {
            if (h.locked.interruptOnLoss
                    && h.lease.token() == lease.token()
                    && h.lease.path().equals(lease.path())) {
                h.interrupt(cause);
            }
        }
    }

    /** The leases held by {@link FencedLocked} methods now, for health and diagnostics. */
    public List<HeldLease> heldLeases() {
        return List.copyOf(held.values());
    }

    /** A lease held by a running {@link FencedLocked} method. */
    public static final class HeldLease {
        private final Lease lease;
        private final LockedMethod locked;
        private final Thread thread;

        private boolean interrupted; // guarded by this
        private boolean finished; // guarded by this

        HeldLease(Lease lease, LockedMethod locked, Thread thread) {
            this.lease = lease;
            this.locked = locked;
            this.thread = thread;
        }

        synchronized void interrupt(LeaseLoss cause) {
            if (finished) {
                return;
            }
            LOG.warn("interrupting {} on {}: its lease (token {}) is lost: {}", locked, path(), token(), cause);
            interrupted = true;
            thread.interrupt();
        }

        /**
         * Called on the method's thread when it has returned: clears an interrupt this class caused, so that
         * it does not leak into whatever the thread does next (a pooled request thread, say). The caller then
         * interrupts the thread again if an enclosing locked method of the same thread was interrupted too and
         * still runs: that one's blocking waits must still end.
         */
        synchronized void finished() {
            finished = true;
            if (interrupted) {
                beforeClear.run();
                Thread.interrupted();
            }
        }

        synchronized boolean wasInterrupted() {
            return interrupted;
        }

        public String path() {
            return lease.path();
        }

        public long token() {
            return lease.token();
        }

        public boolean valid() {
            return lease.isValid();
        }

        public String method() {
            return locked.toString();
        }

        public String thread() {
            return thread.getName();
        }
    }

    /** A listener that fails must not turn a skipped call into a failed one: the call was skipped. */
    private static void tellSkipped(SkippedCalls listener, String method, String path) {
        try {
            listener.skipped(method, path);
        } catch (RuntimeException e) {
            LOG.warn(
                    "{} was told that {} was skipped (lock {}) and failed: {}",
                    listener,
                    method,
                    path,
                    e.toString(),
                    e);
        }
    }
}
