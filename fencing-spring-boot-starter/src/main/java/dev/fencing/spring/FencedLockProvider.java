package dev.fencing.spring;

import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.internal.LockPaths;
import dev.fencing.spring.internal.OneAttempt;
import dev.fencing.spring.internal.ReleaseAfterTransaction;
import dev.fencing.spring.internal.RunningLeases;
import dev.fencing.spring.internal.ZooKeeperLockService;
import java.util.Objects;
import java.util.Optional;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ShedLock {@link LockProvider} on fencing-zookeeper's ZooKeeper locks: a {@code @SchedulerLock} job runs under a
 * {@code FencedLock} on {@code <path prefix>/<lock name>}, and reads its grant's fence token with {@link
 * CurrentLease#token()} to send with its writes. A job whose lock was lost while it ran (a pause longer than the
 * session, a partition) has its late writes refused by a fenced resource once the next run has written.
 *
 * <pre>{@code
 * @Scheduled(fixedDelay = 60_000)
 * @SchedulerLock(name = "nightly-report", lockAtMostFor = "PT10M")
 * public void nightlyReport() {
 *     writer.update(reportRow(), CurrentLease.token());
 * }
 * }</pre>
 *
 * <p><b>What ShedLock's durations mean here.</b> A ZooKeeper lock is not a lease with an expiry time: it is
 * held from the grant until the job returns (its node is deleted then) or until the holder's ZooKeeper
 * session ends (the server deletes the node when the session times out: a paused or cut-off holder loses it
 * about {@code fencing.zookeeper.session-timeout} after it went silent). So:
 *
 * <ul>
 *   <li>{@code lockAtMostFor} is not enforced: a job that runs longer keeps the lock while its session lives,
 *       and a crashed instance's lock passes on when its session expires, not after {@code lockAtMostFor}.
 *       Validity is decided by the session (the lease turns invalid on SUSPENDED, LOST or a long pause of this
 *       JVM); safety is decided by the fence: the resource refuses a stale token's writes, however long the
 *       old run went on.
 *   <li>{@code lockAtLeastFor} is not enforced either: the lock is released when the job returns, so an
 *       instance whose schedule fires just after another instance's short run has ended runs the job again.
 *       The lock keeps runs from overlapping; it does not make a job run once per tick. A job that must not
 *       run twice for one period should make its writes idempotent per period (a row keyed by the period).
 *   <li>{@code SimpleLock.extend} is not supported (ShedLock's default: {@code UnsupportedOperationException}):
 *       there is nothing to extend, the lock lasts as long as the run.
 * </ul>
 *
 * <p><b>Acquiring.</b> One attempt: when another instance holds the lock the job is skipped (ShedLock's "it's
 * locked"), logged at DEBUG. A grant whose lease is already invalid (the connection was suspended meanwhile)
 * is released and the run skipped, with a WARN. A lock name must be a single path segment (no {@code /}), without
 * whitespace at its start or end.
 *
 * <p><b>Threads.</b> ShedLock locks, runs the job and unlocks on one thread, and a ZooKeeper lock belongs to
 * the thread that took it; {@link CurrentLease} reads the lease of the innermost locked job or
 * method running on the calling thread. Work the job hands to other threads must take the token along. Thread-safe.
 */
public final class FencedLockProvider implements LockProvider {
    private static final Logger LOG = LoggerFactory.getLogger(FencedLockProvider.class);

    /** The path under which the locks of {@code @SchedulerLock} names are made, unless another is given. */
    public static final String DEFAULT_PATH_PREFIX = "/locks/shedlock";

    private final LockService locks;
    private final String pathPrefix;

    /** Locks under {@link #DEFAULT_PATH_PREFIX}. */
    public FencedLockProvider(FencedLocks locks) {
        this(locks, DEFAULT_PATH_PREFIX);
    }

    /**
     * Locks under {@code pathPrefix}.
     *
     * @throws IllegalArgumentException if the prefix does not start with {@code /} or ends with one, or has
     *     whitespace at its start or end (a lock service keeps it: another tree than the prefix without it)
     */
    public FencedLockProvider(FencedLocks locks, String pathPrefix) {
        this(new ZooKeeperLockService(Objects.requireNonNull(locks, "locks")), pathPrefix);
    }

    /**
     * Locks of {@code locks}, ZooKeeper's or etcd's, under {@code pathPrefix}.
     *
     * @throws IllegalArgumentException if the prefix does not start with {@code /} or ends with one, or has
     *     whitespace at its start or end (a lock service keeps it: another tree than the prefix without it)
     */
    public FencedLockProvider(LockService locks, String pathPrefix) {
        this.locks = Objects.requireNonNull(locks, "locks");
        Objects.requireNonNull(pathPrefix, "pathPrefix");
        LockPaths.requireNoOuterWhitespace("path prefix", pathPrefix);
        if (!pathPrefix.startsWith("/") || pathPrefix.endsWith("/")) {
            throw new IllegalArgumentException(
                    "path prefix must start with '/' and not end with one, like /locks/shedlock, got '" + pathPrefix
                            + "'");
        }
        this.pathPrefix = pathPrefix;
    }

    /**
     * The lock path of a lock name.
     *
     * @throws IllegalArgumentException if the name is empty, contains {@code /}, or has whitespace at its start or end
     *     (a name from a placeholder, {@code "${report.lock}"}, keeps a properties file's trailing blanks, and the
     *     lock service keeps them: another lock than the name's without them)
     */
    public String path(String lockName) {
        if (lockName.isEmpty() || lockName.contains("/")) {
            throw new IllegalArgumentException(
                    "ShedLock lock name must be one path segment, non-empty and without '/', got '" + lockName + "'");
        }
        LockPaths.requireNoOuterWhitespace("ShedLock lock name", lockName);
        return pathPrefix + "/" + lockName;
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        String path = path(configuration.getName());
        ReleaseAfterTransaction.closeHandedBack();
        Optional<Lease> granted = locks.lock(path).tryAcquire(OneAttempt.WAIT);
        if (granted.isEmpty()) {
            LOG.debug("{} not run: another holder has the lock on {}", configuration.getName(), path);
            return Optional.empty();
        }
        Lease lease = granted.get();
        if (!lease.isValid()) {
            LOG.warn(
                    "{} not run: its lease on {} (token {}) was invalid when granted ({})",
                    configuration.getName(),
                    path,
                    lease.token(),
                    lease.lossCause());
            lease.close();
            return Optional.empty();
        }
        RunningLeases.push(lease);
        return Optional.of(new Grant(lease));
    }

    @Override
    public String toString() {
        return "FencedLockProvider[" + pathPrefix + "]";
    }

    /** One run's lock: releasing it closes the lease, on the thread that took it. */
    private static final class Grant implements SimpleLock {
        private final Lease lease;

        Grant(Lease lease) {
            this.lease = lease;
        }

        @Override
        public void unlock() {
            RunningLeases.remove(lease);
            if (!lease.isValid()) {
                LOG.warn(
                        "job under {} returned after its lease (token {}) was lost ({}): fenced resources refuse what"
                                + " it wrote under that token after a later holder's writes",
                        lease.path(),
                        lease.token(),
                        lease.lossCause());
            }
            ReleaseAfterTransaction.close(lease); // at once, unless the job was locked inside a running transaction
        }
    }
}
