package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.spi.Timeouts;
import dev.fencing.lock.zookeeper.internal.LockRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.zookeeper.data.ACL;

/**
 * Creates {@link FencedLock}s on one Curator client and watches, for all of them, what makes a lease
 * unsafe: the client's connection state (SUSPENDED, LOST) and pauses of this JVM.
 *
 * <pre>{@code
 * CuratorFramework client = CuratorFrameworkFactory.newClient(zkConnect, new ExponentialBackoffRetry(100, 5));
 * client.start();
 * try (FencedLocks locks = FencedLocks.builder(client).listener(myListener).build()) {
 *     FencedLock lock = locks.lock("/locks/sku-42");             // TokenSource.SEQUENCE
 *     FencedLock byZxid = locks.lock("/locks/ledger", TokenSource.ZXID);
 *     try (Lease lease = lock.acquire()) {
 *         write(lease.token());
 *     }
 * }
 * }</pre>
 *
 * Thread-safe. A {@link FencedLock} is a cheap handle: keep it or ask again, as you like. The state
 * behind a lock path lives only while some thread acquires or holds it, so locking millions of paths
 * (one per SKU) does not grow the heap; see docs/locks.md for what stays in ZooKeeper.
 *
 * <p>{@link #close()} stops the pause detector and the connection listener, invalidates every open lease
 * with {@link LeaseLoss#LOCKS_CLOSED} (nothing watches them any more), then tells the listener of each
 * on the closing thread (an acquire that takes up its grant as they close hands out a lease that reads
 * closed, told of on the listener's own thread, never on the acquiring one), and refuses {@code lock} and
 * {@code acquire} from then on with an {@link IllegalStateException}. An acquire already waiting behind
 * another holder is not woken (Curator's wait cannot be, from outside): it waits on until its grant, then
 * hands out a lease that reads closed, or until its timeout or an interrupt of its thread ({@code
 * LockInterruptedException}, its queued node deleted); give waits a timeout, or interrupt them, when
 * closing. It does not close the Curator client; an open lease's node stays until its owner closes the
 * lease or the session ends.
 */
public final class FencedLocks implements AutoCloseable {
    /** Default headroom below the 32-bit wrap of a lock's sequence counter, in child creates. */
    public static final int DEFAULT_SEQUENCE_WRAP_MARGIN = 10_000_000;

    private final LockRegistry registry;
    private final TokenSource defaultTokenSource;

    private FencedLocks(Builder builder) {
        this.defaultTokenSource = builder.tokenSource;
        this.registry = new LockRegistry(
                builder.client, builder.acl, builder.pauseTolerance, builder.listener, builder.sequenceWrapMargin);
    }

    /** A builder for locks on {@code client}, which must be started (and is never closed by this class). */
    public static Builder builder(CuratorFramework client) {
        return new Builder(client);
    }

    /** The lock at {@code path}, with the default token source. */
    public FencedLock lock(String path) {
        return lock(path, defaultTokenSource);
    }

    /**
     * The lock at {@code path}, with the given token source. All users of one path must pick the same
     * source; a path in use in this process with the other source is refused.
     *
     * @throws IllegalArgumentException if the path is malformed (a character ZooKeeper refuses in a path
     *     included), {@code /}, inside {@value
     *     dev.fencing.lock.zookeeper.internal.LockParents#HISTORY_ROOT}, or in use with the other source
     * @throws IllegalStateException if these locks are closed
     */
    public FencedLock lock(String path, TokenSource tokenSource) {
        Objects.requireNonNull(tokenSource, "tokenSource");
        return registry.lock(path, tokenSource);
    }

    /** The read/write lock at {@code path}, with the default token source; see {@link FencedReadWriteLock}. */
    public FencedReadWriteLock readWriteLock(String path) {
        return readWriteLock(path, defaultTokenSource);
    }

    /**
     * The read/write lock at {@code path}, with the given token source.
     *
     * @throws IllegalArgumentException as {@link #lock(String, TokenSource)}: also when the path is in use
     *     here, by a lock of any kind, with the other source
     * @throws IllegalStateException if these locks are closed
     */
    public FencedReadWriteLock readWriteLock(String path, TokenSource tokenSource) {
        Objects.requireNonNull(tokenSource, "tokenSource");
        return registry.readWriteLock(path, tokenSource);
    }

    /**
     * A new participant, out of the election until it joins, in the election at {@code path}, with the
     * default token source; see {@link FencedLeaderElection}. Each call makes another participant.
     *
     * @param participantId what {@link FencedLeaderElection#currentLeaderId()} reports for it (a host
     *     name, a pod name): not blank, at most 1024 bytes of UTF-8, no half of a surrogate pair (which UTF-8
     *     cannot encode: its node would hold another id), no control characters (it goes into thread names and
     *     log lines); uniqueness is up to the caller
     * @throws IllegalArgumentException if the path or the id is malformed
     * @throws IllegalStateException if these locks are closed
     */
    public FencedLeaderElection election(String path, String participantId) {
        return election(path, participantId, defaultTokenSource);
    }

    /**
     * The same, with the given token source; all participants of one election must use the same (a path in
     * use here by a lock with the other source is refused).
     */
    public FencedLeaderElection election(String path, String participantId, TokenSource tokenSource) {
        Objects.requireNonNull(tokenSource, "tokenSource");
        return registry.election(path, tokenSource, participantId);
    }

    /**
     * Also ends every leadership made here (its participant's thread is interrupted) and withdraws every
     * participant: see the class comment for leases.
     */
    @Override
    public void close() {
        registry.close();
    }

    /** Settings for {@link FencedLocks}; every setter checks its value and fails at once. */
    public static final class Builder {
        private final CuratorFramework client;
        private TokenSource tokenSource = TokenSource.SEQUENCE;
        private List<ACL> acl;
        private Duration pauseTolerance;
        private FencedLockListener listener = new FencedLockListener() {};
        private int sequenceWrapMargin = DEFAULT_SEQUENCE_WRAP_MARGIN;

        private Builder(CuratorFramework client) {
            Objects.requireNonNull(client, "client");
            if (client.getState() != CuratorFrameworkState.STARTED) {
                throw new IllegalArgumentException(
                        "the Curator client must be started first; its state is " + client.getState());
            }
            this.client = client;
        }

        /** Token source of {@link FencedLocks#lock(String)}; default {@link TokenSource#SEQUENCE}. */
        public Builder tokenSource(TokenSource tokenSource) {
            this.tokenSource = Objects.requireNonNull(tokenSource, "tokenSource");
            return this;
        }

        /**
         * ACL for lock nodes and for what this library creates around them: lock parents, their
         * markers and history nodes, and missing ancestors (see {@link ZooKeeperDigest}). By default
         * the client's own ACL provider decides. The one exception is {@code /fencing-lock-history}
         * itself, shared by every application on the ensemble: if this library creates it, anyone may
         * read its list of children and add to it, and nobody may delete a child (the given ACL, less
         * DELETE, for these credentials).
         *
         * @throws NullPointerException if {@code acl} or one of its entries is null (naming the entry)
         * @throws IllegalArgumentException if {@code acl} is empty
         */
        public Builder acl(List<ACL> acl) {
            Objects.requireNonNull(acl, "acl");
            if (acl.isEmpty()) {
                throw new IllegalArgumentException("acl must not be empty: ZooKeeper refuses nodes without an ACL");
            }
            for (int i = 0; i < acl.size(); i++) {
                // the entries are not shown: a digest entry holds a hash of the password
                Objects.requireNonNull(acl.get(i), "acl entry " + i + " (of " + acl.size() + ") is null");
            }
            this.acl = List.copyOf(acl);
            return this;
        }

        /**
         * How long this JVM may stop (GC, SIGSTOP, ...) before held leases are invalidated with {@link
         * LeaseLoss#PAUSE_DETECTED}. Default: a third of the negotiated session timeout, at least 200
         * ms, so a holder learns of a pause well before its session could have expired. Keep a value
         * of your own as far below the session timeout: a pause longer than the session timeout but
         * shorter than the tolerance would go unseen here, and the lease would stay valid after the JVM
         * resumes until Curator reports the connection lost, while another client may hold the lock.
         * So a tolerance that is not below the session timeout is refused by {@link #build()} when the
         * client has negotiated its session by then (build after {@code blockUntilConnected} to have it
         * checked at once). Against a session negotiated that short only later (the client was not connected
         * yet, or a server granted less than was asked for) the default for that session, a third of it,
         * applies instead while sessions are that short (fail closed: a pause as long as the session no
         * longer goes unseen), logged at WARN naming both values; the tolerance given applies again once a
         * session is negotiated longer than it. Below the session timeout is not enough by
         * itself: the client pings only after a third of the session timeout without traffic, so the server
         * may expire the session about two thirds of the session timeout into a pause; a tolerance above that
         * can miss such a pause in the same way.
         *
         * @throws IllegalArgumentException if shorter than 20 ms, or longer than the pause detector can count
         *     ({@link Timeouts#LONGEST}, about 146 years)
         */
        public Builder pauseTolerance(Duration pauseTolerance) {
            Objects.requireNonNull(pauseTolerance, "pauseTolerance");
            if (pauseTolerance.compareTo(Duration.ofMillis(20)) < 0) {
                throw new IllegalArgumentException("pauseTolerance must be at least 20 ms, got " + pauseTolerance);
            }
            if (pauseTolerance.compareTo(Timeouts.LONGEST) > 0) {
                // the pause detector counts in nanoseconds; longer failed later with a bare "long overflow"
                throw new IllegalArgumentException("pauseTolerance must be at most " + Timeouts.LONGEST
                        + " (about 146 years; keep it well below the session timeout), got " + pauseTolerance);
            }
            this.pauseTolerance = pauseTolerance;
            return this;
        }

        public Builder listener(FencedLockListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * With {@link TokenSource#SEQUENCE}, refuse to issue a token once the sequence is within this
         * many events of {@code Integer.MAX_VALUE}. Default {@value #DEFAULT_SEQUENCE_WRAP_MARGIN}. At most
         * {@code Integer.MAX_VALUE - 1}, which leaves the first grant of a fresh lock only (its node has
         * sequence 1, after its parent's marker); {@code Integer.MAX_VALUE} would refuse every grant.
         *
         * @throws IllegalArgumentException if {@code margin} is negative or {@code Integer.MAX_VALUE}
         */
        public Builder sequenceWrapMargin(int margin) {
            if (margin < 0 || margin > Integer.MAX_VALUE - 1) {
                throw new IllegalArgumentException("sequenceWrapMargin must be between 0 and "
                        + (Integer.MAX_VALUE - 1) + " (a lock's first node has sequence 1, after its parent's"
                        + " marker: a greater margin refuses every grant), got " + margin);
            }
            this.sequenceWrapMargin = margin;
            return this;
        }

        /**
         * @throws IllegalArgumentException if the pause tolerance is not below the session timeout the client
         *     has negotiated (a pause as long as the session could expire it unseen); a client that has not
         *     connected yet has negotiated none, see {@link #pauseTolerance}
         */
        public FencedLocks build() {
            int sessionMillis = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
            if (pauseTolerance != null
                    && sessionMillis > 0
                    && pauseTolerance.compareTo(Duration.ofMillis(sessionMillis)) >= 0) {
                throw new IllegalArgumentException("pauseTolerance " + pauseTolerance
                        + " must be below the session timeout of " + sessionMillis + " ms the client negotiated:"
                        + " a pause as long as the session lets the lock pass unseen");
            }
            return new FencedLocks(this);
        }
    }
}
