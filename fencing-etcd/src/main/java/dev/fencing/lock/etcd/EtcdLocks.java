package dev.fencing.lock.etcd;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.etcd.internal.EtcdLockRegistry;
import dev.fencing.lock.etcd.internal.LockNames;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.Objects;

/**
 * Creates {@link FencedLock}s and {@link FencedLeaderElection}s on etcd, through a jetcd {@link Client} the
 * application owns, and watches, for all of them, what makes a lease or a term unsafe: keep-alives that stop being answered, an etcd lease or lock key that goes
 * away, pauses of this JVM.
 *
 * <h2>The recipe</h2>
 *
 * etcd's own {@code concurrency.Mutex}: each acquire grants an etcd lease of its own (kept alive from here) and
 * creates the key {@code <prefix>/<name>/<lease id in hex>} with it, in a transaction that creates the key only
 * if it is absent and reads the first key under {@code <prefix>/<name>/}. The lock is granted once no key under
 * {@code <prefix>/<name>/} has a smaller create revision: at once when that first key is the own one; otherwise
 * each waiter watches only the deletion of the key immediately before its own (no herd), then reads again.
 *
 * <h2>The fence token: the key's create revision</h2>
 *
 * {@link Lease#token()} is the create revision of the holder's key. Why it rises strictly from grant to grant of
 * one lock:
 *
 * <ol>
 *   <li>etcd's revision is one counter for the whole cluster's key space, raised by every write (every put,
 *       delete and transaction that writes) and never reused; it is part of the replicated raft state, so a new
 *       leader continues it, and a member that restarts replays it from its log and snapshot.
 *   <li>A key's create revision is the revision of the write that created it, so a key created later has a
 *       strictly greater one. It does not change while the key lives: updates change its mod revision, and
 *       compaction removes only history older than the compacted revision, never a live key or its create
 *       revision.
 *   <li>A contender is granted only when a read it makes in one transaction with its own key's existence (the
 *       transaction that creates the key, or a later one that checks the key still exists) finds no key under
 *       the lock with a smaller create revision. Suppose grant G1 (revision r1) came
 *       before grant G2 (revision r2) of the same lock. If r2 were smaller than r1, G2's key existed when G1's
 *       contender created its own (it was created earlier), so G1 waited until it was gone; yet G2's contender
 *       was granted holding that very key, and its key is deleted only after that. Two grants with overlapping
 *       keys cannot both find the other's key absent: the one with the larger revision sees the smaller. So the
 *       later grant has the larger revision, and since the counter never repeats, strictly larger.
 * </ol>
 *
 * Tokens are therefore comparable across holders, clients, leader changes, restarts and compactions of one
 * cluster, and (being one counter) across locks. What breaks them: restoring the cluster from an older snapshot
 * ({@code etcdctl snapshot restore}, or a disaster recovery that brings back older data), which rewinds the
 * revision so that new keys are created with revisions that were handed out before; and pointing the client at
 * a different cluster. Resources that stored a token from before either event refuse the new, smaller tokens
 * until a grant passes the stored one. A grant whose token is lower than one this process saw on the same lock is
 * logged and told to {@link FencedLockListener#tokenRegressed}.
 *
 * <h2>When a lease is invalid</h2>
 *
 * The rules of {@link Lease}, on etcd. A check that <em>begins</em> after any of these answers {@code false}, and
 * keeps answering {@code false}:
 *
 * <ul>
 *   <li>the keep-alive deadline passed: the send time of the last answered keep-alive (or of the lease's grant)
 *       plus the TTL the server granted, less a margin of 2 % for clock rates, by the monotonic clock or by the wall
 *       clock (which also counts the time a suspended machine slept) ({@link LeaseLoss#SESSION_LOST}).
 *       The server renewed the lease after that send time, so before the deadline it cannot have expired the
 *       lease on its own; after it, it may have;
 *   <li>a keep-alive was answered with a TTL of zero or "lease not found": the etcd lease expired or was revoked,
 *       and the key went with it ({@link LeaseLoss#SESSION_LOST});
 *   <li>a keep-alive could not be sent (its request threw): the etcd lease is not renewed any more ({@link
 *       LeaseLoss#SESSION_LOST});
 *   <li>the holder's key was deleted, or written by another client after its creation, as the watch reports
 *       ({@link LeaseLoss#NODE_GONE}), or {@link Lease#verify()} read it and found it gone, written since its
 *       creation or belonging to another lease ({@link LeaseLoss#NODE_GONE}). A lock writes its key once, when it
 *       creates it; another client's put on it takes it off the holder's etcd lease (onto the writer's, or none):
 *       it keeps its create revision and still stands first, but the end of the holder's lease no longer deletes
 *       it and its value is no longer the holder's, so the key is no longer the holder's. One watch per {@code
 *       EtcdLocks}, over its prefix, reports the deletions and writes of every key under it; when that watch
 *       breaks (a dropped stream, a compacted revision), it is replaced, and each held key is read on its own: a
 *       hold whose key that read does not find as it was created is ended;
 *   <li>for the lease TTL (less the deadline's margin), no working watch covered the holder's key and no read
 *       found it, say while etcd renews leases but cannot serve reads: the key may still be there, but nothing
 *       here can tell ({@link LeaseLoss#CONNECTION_SUSPENDED});
 *   <li>this JVM stopped for longer than the pause tolerance ({@link LeaseLoss#PAUSE_DETECTED});
 *   <li>{@link Lease#close()} returned ({@link LeaseLoss#RELEASED});
 *   <li>these locks were closed ({@link LeaseLoss#LOCKS_CLOSED}).
 * </ul>
 *
 * What the check cannot know, and why the resource checks the token: a lease revoked or a key deleted or
 * overwritten by someone else, until the watch or a keep-alive tells this client (the lock may pass in that gap), and a pause that has
 * not ended yet.
 *
 * <pre>{@code
 * Client client = Client.builder().endpoints("http://etcd1:2379", "http://etcd2:2379").build();
 * try (EtcdLocks locks = EtcdLocks.builder(client).prefix("locks").leaseTtl(Duration.ofSeconds(10)).build()) {
 *     FencedLock lock = locks.lock("sku-42");               // keys under locks/sku-42/
 *     try (Lease lease = lock.acquire()) {
 *         inventory.decrement("sku-42", 1, lease.token());  // the resource refuses tokens older than it stored
 *     }
 * }
 * client.close();
 * }</pre>
 *
 * Thread-safe. A {@link FencedLock} is a cheap handle. Each grant belongs to the thread that acquired it; a
 * thread that acquires a lock it holds through the same {@code EtcdLocks} gets a lease with the same token
 * (re-entry), while through another {@code EtcdLocks} it is a contender like any other and waits for itself.
 *
 * <p>{@link #close()} stops the keep-alives and the pause detector, invalidates every open lease with {@link
 * LeaseLoss#LOCKS_CLOSED} and tells the listener of each on the closing thread, makes waiting acquires throw
 * {@link IllegalStateException} (one that is taking up its grant as they close hands out a lease that reads
 * closed, told of on the listener's thread), and refuses {@code lock} and {@code acquire} from then on. It does not
 * close the client; an open lease's key stays until its owner closes the lease or its etcd lease expires, within a
 * TTL.
 */
public final class EtcdLocks implements AutoCloseable {
    /** The default TTL of each grant's etcd lease. */
    public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);
    /** The default key prefix: lock keys are {@code fencing/locks/<name>/<lease id>}. */
    public static final String DEFAULT_PREFIX = "fencing/locks";

    private final EtcdLockRegistry registry;

    private EtcdLocks(Builder builder) {
        Duration tolerance = builder.pauseTolerance != null
                ? builder.pauseTolerance
                : Duration.ofMillis(Math.max(200, builder.leaseTtl.toMillis() / 3));
        this.registry = new EtcdLockRegistry(new EtcdLockRegistry.Settings(
                builder.client, builder.prefix, builder.leaseTtl, tolerance, builder.listener));
    }

    /** A builder for locks on {@code client}, which the application closes (after these locks). */
    public static Builder builder(Client client) {
        return new Builder(client);
    }

    /**
     * The lock called {@code name}, whose contenders' keys live under {@code <prefix>/<name>/}.
     *
     * @throws IllegalArgumentException if the name is blank, longer than 1024 bytes of UTF-8 (it goes into every key
     *     of the lock, and etcd refuses requests past a size), contains {@code /} or control characters, or half of a
     *     surrogate pair (which UTF-8 cannot encode: etcd would get another name's key)
     * @throws IllegalStateException if these locks are closed
     */
    public FencedLock lock(String name) {
        return registry.lock(name);
    }

    /**
     * A new participant, out of the election until it joins, in the election called {@code name}; see {@link
     * FencedLeaderElection}. Each call makes another participant. The election is the lock of that name: each
     * candidacy contends for it with a key that holds the participant id, the term's token is that key's create
     * revision (so it rises from term to term exactly as a lock's token from grant to grant), and a term ends by
     * the rules of a lease (see the class comment), on a step-down, or when the task returns. A {@link
     * FencedLock} of the same name contends with the participants.
     *
     * <pre>{@code
     * FencedLeaderElection election = locks.election("ledger-writer", "host-a");
     * Leadership term = election.awaitLeadership();
     * ledger.append(batch, term.token());
     * election.stepDown();
     * }</pre>
     *
     * @param participantId what {@link FencedLeaderElection#currentLeaderId()} reports for it (a host name, a pod
     *     name): not blank, at most 1024 bytes of UTF-8, no half of a surrogate pair, no control characters (it
     *     goes into thread names and log lines); uniqueness is up to the caller
     * @throws IllegalArgumentException if the name or the id is malformed
     * @throws IllegalStateException if these locks are closed
     */
    public FencedLeaderElection election(String name, String participantId) {
        return registry.election(name, participantId);
    }

    /**
     * See the class comment; also ends every leadership made here (its participant's thread is interrupted) and
     * withdraws every participant. Safe to call twice.
     */
    @Override
    public void close() {
        registry.close();
    }

    /** Settings for {@link EtcdLocks}; every setter checks its value and fails at once, naming it. */
    public static final class Builder {
        private final Client client;
        private String prefix = DEFAULT_PREFIX;
        private Duration leaseTtl = DEFAULT_LEASE_TTL;
        private Duration pauseTolerance;
        private FencedLockListener listener = new FencedLockListener() {};

        private Builder(Client client) {
            this.client = Objects.requireNonNull(client, "client");
        }

        /**
         * The key prefix of these locks, default {@value #DEFAULT_PREFIX}: segments separated by single
         * {@code /}, no leading or trailing {@code /}, no control characters nor half of a surrogate pair. Locks
         * of one name under one prefix are one lock, in every process. Do not nest the prefixes of different
         * {@code EtcdLocks} (a lock {@code b} under prefix {@code a} has its keys under {@code a/b/}, where a prefix
         * {@code a/b} puts its locks).
         */
        public Builder prefix(String prefix) {
            LockNames.requireValidPrefix(prefix);
            this.prefix = prefix;
            return this;
        }

        /**
         * The TTL of each grant's etcd lease, default 10 s: whole seconds (etcd counts leases in seconds), at
         * least 2 s (etcd raises shorter TTLs to its minimum anyway). A holder cut from etcd, or a paused one,
         * loses its lock to the next contender about a TTL after its last answered keep-alive; its lease reads
         * invalid here before that.
         */
        public Builder leaseTtl(Duration leaseTtl) {
            Objects.requireNonNull(leaseTtl, "leaseTtl");
            if (leaseTtl.compareTo(Duration.ofSeconds(2)) < 0) {
                throw new IllegalArgumentException("leaseTtl must be at least 2 s, got " + leaseTtl);
            }
            if (leaseTtl.getNano() != 0) {
                throw new IllegalArgumentException(
                        "leaseTtl must be whole seconds (etcd counts lease TTLs in seconds), got " + leaseTtl);
            }
            if (leaseTtl.compareTo(Duration.ofDays(365)) > 0) {
                throw new IllegalArgumentException("leaseTtl must be at most a year, got " + leaseTtl);
            }
            this.leaseTtl = leaseTtl;
            return this;
        }

        /**
         * How long this JVM may stop (GC, SIGSTOP, ...) before held leases are invalidated with {@link
         * LeaseLoss#PAUSE_DETECTED}: at least 20 ms and less than the lease TTL. Default: a third of the TTL, at
         * least 200 ms.
         */
        public Builder pauseTolerance(Duration pauseTolerance) {
            Objects.requireNonNull(pauseTolerance, "pauseTolerance");
            if (pauseTolerance.compareTo(Duration.ofMillis(20)) < 0) {
                throw new IllegalArgumentException("pauseTolerance must be at least 20 ms, got " + pauseTolerance);
            }
            this.pauseTolerance = pauseTolerance;
            return this;
        }

        /** Told when a lease becomes invalid; see {@link FencedLockListener} for its threads. */
        public Builder listener(FencedLockListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * @throws IllegalArgumentException if the pause tolerance is not below the lease TTL (a pause that
         *     outlasts the TTL could go unseen)
         */
        public EtcdLocks build() {
            if (pauseTolerance != null && pauseTolerance.compareTo(leaseTtl) >= 0) {
                throw new IllegalArgumentException("pauseTolerance " + pauseTolerance + " must be below leaseTtl "
                        + leaseTtl + ": a pause as long as the TTL lets the lock pass unseen");
            }
            return new EtcdLocks(this);
        }
    }
}
