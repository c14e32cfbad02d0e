package dev.fencing.spring;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.internal.LockPaths;
import dev.fencing.spring.internal.OneAttempt;
import dev.fencing.spring.internal.ReleaseAfterTransaction;
import dev.fencing.spring.internal.RunningLeases;
import dev.fencing.spring.internal.ZooKeeperLockService;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.integration.support.locks.ExpirableLockRegistry;

/**
 * A Spring Integration {@code LockRegistry} on the starter's {@link LockService}, ZooKeeper's or etcd's locks: {@link #obtain(Object)} gives a
 * {@link java.util.concurrent.locks.Lock} over the {@code FencedLock} at {@code <path prefix>/<key>}, and the
 * holder reads its grant's fence token from it, so code written against Spring's lock abstraction (aggregators,
 * {@code LockRegistryLeaderInitiator}, {@code executeLocked}) can send the token with its writes.
 *
 * <pre>{@code
 * @Bean
 * FencedLockRegistry lockRegistry(LockService locks) {
 *     return new FencedLockRegistry(locks, "/locks/orders");
 * }
 *
 * FencedLockRegistry.KeyLock lock = lockRegistry.obtain("order-42");
 * lock.lockInterruptibly();
 * try {
 *     writer.update(shipOrder("order-42"), lock.token()); // refused once a later holder of order-42 wrote
 * } finally {
 *     lock.unlock();
 * }
 * }</pre>
 *
 * <p><b>The {@code Lock} contract</b>, as Spring Integration's own registries keep it: one {@link KeyLock} per
 * key (the same object for every {@code obtain} of that key until it expires); reentrant for the holding
 * thread, which gets the same lease and token again, and releases the ZooKeeper lock at its last {@code
 * unlock()}; {@code unlock()} by a thread that does not hold it throws {@link IllegalMonitorStateException};
 * {@code lockInterruptibly()} and {@code tryLock(time, unit)} throw {@link InterruptedException} when interrupted
 * while waiting (locally or on ZooKeeper); {@code lock()} waits through interrupts and restores the flag; {@code
 * tryLock()} makes one attempt. Threads of this JVM wait for a key in a local {@link ReentrantLock} first, so
 * one thread per key contends in ZooKeeper. {@code newCondition()} throws {@link
 * UnsupportedOperationException}: a ZooKeeper lock has no conditions to wait on.
 *
 * <p><b>Lock loss.</b> A {@code Lock} cannot say it was lost; its {@link KeyLock#lease()} can ({@code isValid()},
 * {@code lossCause()}), and the resource refuses the token's writes after a later holder's. A grant whose lease is
 * invalid at once is released and refused ({@code LeaseLostException}); an {@code unlock()} after a loss logs a
 * WARN naming the path and token and releases as usual (it does not throw, unlike Redis's registry: the fence has
 * already refused what mattered).
 *
 * <p><b>Transactions.</b> A transaction begun while the thread holds a lock of this registry does not commit once
 * the lock's lease is known lost: the commit throws {@code LeaseLostException} and the transaction rolls back, as
 * for a {@link FencedLocked} method (the check the starter adds to the context's transaction managers while
 * {@code fencing.locked.enabled} is on, the default). Unlock after the transaction completes: a lock released
 * before its transaction commits lets the next holder read the rows from before the write.
 *
 * <p>Keys are {@code String}s, one path segment each (no {@code /}). Thread-safe.
 */
public final class FencedLockRegistry implements ExpirableLockRegistry<FencedLockRegistry.KeyLock> {
    private static final Logger LOG = LoggerFactory.getLogger(FencedLockRegistry.class);

    private final LockService locks;
    private final String pathPrefix;
    private final Map<String, KeyLock> obtained = new ConcurrentHashMap<>();

    /**
     * @throws IllegalArgumentException if the prefix does not start with {@code /} or ends with one, or has
     *     whitespace at its start or end (a lock service keeps it: another tree than the prefix without it)
     */
    public FencedLockRegistry(FencedLocks locks, String pathPrefix) {
        this(new ZooKeeperLockService(Objects.requireNonNull(locks, "locks")), pathPrefix);
    }

    /**
     * On {@code locks}, ZooKeeper's or etcd's (the starter's {@link LockService} bean).
     *
     * @throws IllegalArgumentException if the prefix does not start with {@code /} or ends with one, or has
     *     whitespace at its start or end (a lock service keeps it: another tree than the prefix without it)
     */
    public FencedLockRegistry(LockService locks, String pathPrefix) {
        this.locks = Objects.requireNonNull(locks, "locks");
        Objects.requireNonNull(pathPrefix, "pathPrefix");
        LockPaths.requireNoOuterWhitespace("path prefix", pathPrefix);
        if (!pathPrefix.startsWith("/") || pathPrefix.endsWith("/")) {
            throw new IllegalArgumentException(
                    "path prefix must start with '/' and not end with one, like /locks/orders, got '" + pathPrefix
                            + "'");
        }
        this.pathPrefix = pathPrefix;
    }

    /**
     * The lock of {@code key}, at {@code <path prefix>/<key>}.
     *
     * @throws IllegalArgumentException if the key is not a String, is empty or contains {@code /}
     */
    @Override
    public KeyLock obtain(Object key) {
        if (!(key instanceof String name) || name.isEmpty() || name.contains("/")) {
            throw new IllegalArgumentException(
                    "a FencedLockRegistry key must be a non-empty String without '/', got " + key);
        }
        return obtained.computeIfAbsent(name, k -> new KeyLock(locks.lock(pathPrefix + "/" + k)));
    }

    /** Forgets the locks of keys nobody holds or waits for and that were last locked before {@code age} ms ago. */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        obtained.values()
                .removeIf(
                        lock -> now - lock.lastUsed > age && !lock.local.isLocked() && !lock.local.hasQueuedThreads());
    }

    @Override
    public String toString() {
        return "FencedLockRegistry[" + pathPrefix + "]";
    }

    /**
     * The lock of one key: a {@link Lock} over a {@code FencedLock}, whose holder reads its lease and fence token.
     * See {@link FencedLockRegistry} for the contract.
     */
    public static final class KeyLock implements Lock {
        private final FencedLock fenced;
        private final ReentrantLock local = new ReentrantLock();
        private Lease lease; // guarded by local: set and read by the holding thread only
        private volatile long lastUsed = System.currentTimeMillis();

        KeyLock(FencedLock fenced) {
            this.fenced = fenced;
        }

        /** The lock path. */
        public String path() {
            return fenced.path();
        }

        /**
         * The holder's lease.
         *
         * @throws IllegalMonitorStateException if the calling thread does not hold this lock
         */
        public Lease lease() {
            if (!local.isHeldByCurrentThread()) {
                throw new IllegalMonitorStateException("lock " + path() + " is not held by thread "
                        + Thread.currentThread().getName());
            }
            return lease;
        }

        /**
         * The holder's fence token: send it with every write made under this lock.
         *
         * @throws IllegalMonitorStateException if the calling thread does not hold this lock
         */
        public long token() {
            return lease().token();
        }

        /** Whether the calling thread holds this lock. */
        public boolean isHeldByCurrentThread() {
            return local.isHeldByCurrentThread();
        }

        @Override
        public void lock() {
            ReleaseAfterTransaction.closeHandedBack();
            local.lock();
            if (local.getHoldCount() > 1) {
                return;
            }
            boolean interrupted = false;
            try {
                while (true) {
                    try {
                        granted(fenced.acquire());
                        return;
                    } catch (LockInterruptedException e) {
                        interrupted = true;
                        Thread.interrupted(); // lock() waits on; the flag is restored below
                    }
                }
            } catch (RuntimeException | Error e) {
                local.unlock();
                throw e;
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            ReleaseAfterTransaction.closeHandedBack();
            local.lockInterruptibly();
            if (local.getHoldCount() > 1) {
                return;
            }
            try {
                granted(fenced.acquire());
            } catch (LockInterruptedException e) {
                local.unlock();
                Thread.interrupted();
                throw interrupted(e);
            } catch (RuntimeException | Error e) {
                local.unlock();
                throw e;
            }
        }

        @Override
        public boolean tryLock() {
            ReleaseAfterTransaction.closeHandedBack();
            if (!local.tryLock()) {
                return false;
            }
            try {
                return tryFenced(OneAttempt.WAIT);
            } catch (LockInterruptedException e) {
                return false; // interrupted in its one attempt: not granted, and the flag is set again
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            ReleaseAfterTransaction.closeHandedBack();
            long deadline = System.nanoTime() + unit.toNanos(time);
            if (!local.tryLock(time, unit)) {
                return false;
            }
            try {
                return tryFenced(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            } catch (LockInterruptedException e) {
                Thread.interrupted();
                throw interrupted(e);
            }
        }

        /**
         * With the local lock held: takes the ZooKeeper lock, or lets the local one go. A re-entrant attempt
         * answers true only while the held lease is valid: once it was lost (an expired session, a long pause),
         * the lost lease is closed and the attempt takes the ZooKeeper lock afresh, with a new token, or answers
         * false. So a caller that checks its hold with {@code tryLock} (Spring Integration's {@code
         * LockRegistryLeaderInitiator} does, on each heartbeat) learns that it lost the lock, as it does with
         * Spring's own registries.
         */
        private boolean tryFenced(Duration wait) {
            if (local.getHoldCount() > 1) {
                if (lease != null && lease.isValid()) {
                    return true;
                }
                if (lease != null) {
                    lease.close(); // lost: its node is gone, or goes with the session; the token stays readable
                }
            }
            try {
                Optional<Lease> got = fenced.tryAcquire(wait);
                if (got.isEmpty()) {
                    local.unlock();
                    return false;
                }
                granted(got.get());
                return true;
            } catch (RuntimeException | Error e) {
                local.unlock();
                throw e;
            }
        }

        /** Keeps a valid grant; releases and refuses one that was invalid from the start. */
        private void granted(Lease granted) {
            if (!granted.isValid()) {
                try {
                    granted.ensureValid();
                } finally {
                    granted.close();
                }
            }
            if (lease != null) {
                RunningLeases.releaseLock(lease); // a lost lease a re-entrant attempt replaced
            }
            lease = granted;
            RunningLeases.holdLock(granted);
            lastUsed = System.currentTimeMillis();
        }

        /**
         * Releases one hold; the last one releases the ZooKeeper lock.
         *
         * @throws IllegalMonitorStateException if the calling thread does not hold this lock
         */
        @Override
        public void unlock() {
            if (!local.isHeldByCurrentThread()) {
                throw new IllegalMonitorStateException("lock " + path() + " is not held by thread "
                        + Thread.currentThread().getName());
            }
            if (local.getHoldCount() > 1) {
                local.unlock();
                return;
            }
            Lease held = lease;
            lease = null;
            RunningLeases.releaseLock(held);
            try {
                if (!held.isValid() && held.lossCause() != LeaseLoss.RELEASED) {
                    LOG.warn(
                            "lock {} unlocked after its lease (token {}) was lost ({}): fenced resources refuse"
                                    + " what was written under that token after a later holder's writes",
                            path(),
                            held.token(),
                            held.lossCause());
                }
                held.close();
            } finally {
                local.unlock();
            }
        }

        /** Not supported: a ZooKeeper lock has no conditions. */
        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("a FencedLockRegistry lock (" + path() + ") has no conditions");
        }

        @Override
        public String toString() {
            return "FencedLockRegistry.KeyLock[" + path() + (local.isLocked() ? ", locked" : ", unlocked") + "]";
        }

        private static InterruptedException interrupted(LockInterruptedException e) {
            InterruptedException interrupted =
                    new InterruptedException("interrupted while waiting for lock " + e.resource());
            interrupted.initCause(e);
            return interrupted;
        }
    }
}
