package dev.fencing.redis;

import dev.fencing.FencePolicy;
import dev.fencing.InvalidFenceTokenException;
import dev.fencing.redis.internal.BulkLimit;
import dev.fencing.redis.internal.CommandTimeout;
import dev.fencing.redis.internal.DefaultFencedRedis;
import dev.fencing.redis.internal.EvictionCheck;
import dev.fencing.redis.internal.FencedKeys;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * Writes that Redis applies only when they carry a fresh enough fence token. The token check and the write
 * are ONE Lua script ({@code EVALSHA}, falling back to {@code EVAL} when Redis answers {@code NOSCRIPT}),
 * which Redis runs atomically, never a read followed by a write, so a lock holder that paused (GC, page
 * fault, SIGSTOP) past the end of its lease cannot overwrite the work of the holder that came after it:
 *
 * <pre>
 *  holder A (token 7)   acquire ... [ 10 s GC pause ............ ] SET stock ... token 7  -&gt; Rejected(8)
 *  lock service                  A's session expires -&gt; grant to B
 *  holder B (token 8)                          acquire, SET stock ... token 8 -&gt; Applied
 * </pre>
 *
 * <pre>{@code
 * RedisClient client = RedisClient.create("redis://localhost:6379");
 * FencedRedis redis = FencedRedis.builder(client.connect()).build();          // STRICT
 *
 * redis.trySet("{order-7}:state", "PAID", lease.token());                    // Applied or Rejected
 * redis.tryHset("{order-7}", Map.of("state", "PAID", "by", "worker-3"), lease.token());
 * redis.tryDecrementBy("{sku-42}:stock", 3, lease.token());                  // PredicateFailed below 0
 * redis.tryDelete("{order-7}:state", lease.token());                        // the token stays
 * }</pre>
 *
 * <p><b>Where the token lives.</b> Each fenced key {@code K} has a token key {@link #tokenKey(String) K +
 * ":fencing-token"}, a plain string holding the decimal token of the last write accepted on {@code K}
 * (absent: 0, which every valid token beats). The value itself stays what a plain command would store
 * (a string, a hash), readable and writable by any client. The token key shares {@code K}'s hash slot when
 * {@code K} has a hash tag ({@code {sku-42}:stock} and {@code {sku-42}:stock:fencing-token}), so that on
 * Redis Cluster the script touches one slot; with a cluster connection (or {@link Builder#clusterKeys}) a
 * key without a hash tag is refused. Tokens are compared exactly as 64-bit integers (as decimal text, not
 * as Lua's doubles).
 *
 * <p><b>Delete and expiry.</b> A fenced delete removes the value and raises the token; the token key stays,
 * so a later stale write is refused and cannot recreate the key. A fenced set with a time to live expires
 * the value only: the token key never expires, so it always outlives the value, and a holder that was
 * paused past the expiry is still refused. The price is one small key per fenced key, never removed by the
 * library: delete token keys yourself (for example {@code UNLINK K K:fencing-token}) only once no holder of
 * an older token can still be running.
 *
 * <p><b>What is guaranteed.</b> On one Redis node: a write is applied only if its token passes the policy
 * against the key's token, and the value and the token change together (a script runs alone and Redis
 * does not interleave it). A client writing behind the library's back (a plain {@code SET}) is not fenced:
 * the token key guards only writes that go through it. What is NOT guaranteed:
 *
 * <ul>
 *   <li>Replication is asynchronous: Redis acknowledges a write before any replica has it. If the primary
 *       fails and a replica that had not received the last token is promoted, the token goes back, and an
 *       older holder's write is accepted. {@code WAIT numreplicas timeout} after a write narrows that
 *       window (it tells how many replicas have it, it does not make the write durable), and so does
 *       running the failover so that only an up-to-date replica is promoted.
 *   <li>Durability of one node: with the default {@code appendfsync everysec} a crash loses up to about a
 *       second of acknowledged tokens, and without an append-only file everything since the last snapshot.
 *       {@code appendonly yes} with {@code appendfsync always} keeps every acknowledged token across a
 *       crash and restart.
 *   <li>Redis as the token <i>source</i> (INCR, Redlock) is not safe for the same reason, and Redlock
 *       also depends on clocks and on pauses not happening: use a ZooKeeper (or etcd) lock's token, such as
 *       {@code fencing-zookeeper}'s, with Redis as the fenced resource.
 * </ul>
 *
 * <p>Every method refuses a token {@code <= 0} with {@link InvalidFenceTokenException}, and malformed input
 * (an empty key, a value over {@link Builder#maxValueBytes}, a key over {@link
 * Builder#maxKeyBytes}, a key ending in the token suffix) with an
 * {@link IllegalArgumentException} naming it, before anything is sent. The {@code try...} methods return a
 * {@link WriteOutcome}; their twins throw the matching {@link FencingRedisException}; failures of Redis
 * (WRONGTYPE: the key holds another type; a token key holding something else; no answer within the
 * connection's command timeout) are {@link FencedRedisWriteException}, naming the key. A command timeout of
 * zero is Lettuce's "no timeout": the blocking methods then wait for the answer, as Lettuce's own do.
 *
 * <p>Thread-safe, as the Lettuce connection it wraps; one per connection is enough. {@link #async()}
 * gives the same writes without waiting, for pipelining. Rejections are logged at DEBUG with the key and
 * tokens.
 */
public interface FencedRedis {

    /** Suffix of the token key of every fenced key: {@code K} keeps its token in {@code K + TOKEN_KEY_SUFFIX}. */
    String TOKEN_KEY_SUFFIX = FencedKeys.TOKEN_KEY_SUFFIX;

    /** The key holding {@code key}'s fence token. */
    static String tokenKey(String key) {
        return FencedKeys.tokenKey(key);
    }

    /** Fenced writes over one standalone (or Sentinel-managed) connection. */
    static Builder builder(StatefulRedisConnection<String, String> connection) {
        Objects.requireNonNull(connection, "connection");
        return new Builder(connection.async(), connection.getTimeout(), false, connection::isMulti);
    }

    /** Fenced writes over a Redis Cluster connection: every key must have a hash tag. */
    static Builder builder(StatefulRedisClusterConnection<String, String> connection) {
        Objects.requireNonNull(connection, "connection");
        return new Builder(connection.async(), connection.getTimeout(), true, () -> false);
    }

    FencePolicy policy();

    /** The same writes, returning without waiting for Redis. */
    FencedRedisAsync async();

    /** {@code SET key value} under the fence. A key that holds another type is an error (WRONGTYPE). */
    WriteOutcome trySet(String key, String value, long token);

    /**
     * {@code SET key value PX ttl} under the fence: the value expires after {@code ttl}, its token key
     * never does.
     *
     * @throws IllegalArgumentException if {@code ttl} is under 1 ms or over a hundred years
     */
    WriteOutcome trySet(String key, String value, Duration ttl, long token);

    /** @throws StaleFenceException when the key carries a token the policy does not let this one overwrite */
    void set(String key, String value, long token);

    /** @throws StaleFenceException when the key carries a token the policy does not let this one overwrite */
    void set(String key, String value, Duration ttl, long token);

    /** {@code HSET key field value ...} under the fence; other fields of the hash are kept. */
    WriteOutcome tryHset(String key, Map<String, String> fields, long token);

    /** @throws StaleFenceException when the key carries a token the policy does not let this one overwrite */
    void hset(String key, Map<String, String> fields, long token);

    /**
     * {@code DEL key} under the fence; the token key is raised and kept, so that no older token can write
     * the key again. {@link WriteOutcome.Applied#reply()} is the number of keys deleted (0 or 1).
     */
    WriteOutcome tryDelete(String key, long token);

    /** @throws StaleFenceException when the key carries a token the policy does not let this one overwrite */
    void delete(String key, long token);

    /**
     * Adds {@code delta} to the integer in {@code key} (a missing key counts as 0), under the fence and a
     * guard: the write applies only if the new value is at least {@code minimum}, otherwise the outcome is
     * {@link WriteOutcome.PredicateFailed} and nothing changes. {@link WriteOutcome.Applied#reply()} is the
     * new value. Values, {@code delta} and {@code minimum} must lie within ±2^53 (the guard's arithmetic is
     * Lua's); a counter outside that range is an error naming the key.
     */
    WriteOutcome tryIncrementBy(String key, long delta, long minimum, long token);

    /**
     * The inventory case: takes {@code amount} from the counter in {@code key} only if it stays {@code >=
     * 0} ({@code stock - qty >= 0}); {@link #tryIncrementBy} with {@code -amount} and minimum 0.
     *
     * @throws IllegalArgumentException if {@code amount} is negative or over 2^53
     */
    WriteOutcome tryDecrementBy(String key, long amount, long token);

    /**
     * @throws StaleFenceException when the key carries a token the policy does not let this one overwrite
     * @throws FencePredicateFailedException when the new value would be below {@code minimum}
     * @return the new value
     */
    long incrementBy(String key, long delta, long minimum, long token);

    /**
     * @throws StaleFenceException when the key carries a token the policy does not let this one overwrite
     * @throws FencePredicateFailedException when the counter holds less than {@code amount}
     * @return the new value
     */
    long decrementBy(String key, long amount, long token);

    /**
     * Runs the application's script under the fence of {@code keys.get(0)}: checks and raises that key's
     * token, then runs the body with {@code KEYS} = {@code keys} and {@code ARGV} = {@code args}, all in one
     * script. On a cluster every key must share the first key's hash slot. Only the first key's token is checked
     * and raised: the other keys are guarded by it alone. A key among them that other writes fence under its own
     * token key (a {@link #trySet} of it) keeps that token, which the script neither checks nor raises, so a
     * holder of the first key's token writes it even after a newer token was stored for it; fence such a key by
     * the first key only, or write it under its own fence.
     *
     * @throws IllegalArgumentException if {@code keys} is empty
     */
    WriteOutcome tryEval(FencedScript script, List<String> keys, List<String> args, long token);

    /**
     * @throws StaleFenceException when the fenced key carries a token the policy does not let this one overwrite
     * @return the body's reply
     */
    Object eval(FencedScript script, List<String> keys, List<String> args, long token);

    /** Options for a {@link FencedRedis}; every setter checks its value. */
    final class Builder {
        /** Redis's own limit for one string ({@code proto-max-bulk-len}'s default). */
        public static final int DEFAULT_MAX_VALUE_BYTES = 512 * 1024 * 1024;
        /** The longest {@link #waitForReplicas} timeout: a century. */
        public static final Duration MAX_WAIT_TIMEOUT = Duration.ofDays(365 * 100);
        /** How many {@link FencedScript} bodies a writer keeps ready to send, by default. */
        public static final int DEFAULT_SCRIPT_CACHE_SIZE = 256;

        private final RedisClusterAsyncCommands<String, String> commands;
        private final Duration timeout;
        private final BooleanSupplier inTransaction;
        private boolean clusterKeys;
        private FencePolicy policy = FencePolicy.STRICT;
        private int maxValueBytes = DEFAULT_MAX_VALUE_BYTES;
        private int maxKeyBytes = DEFAULT_MAX_VALUE_BYTES;
        private int waitReplicas;
        private Duration waitTimeout = Duration.ZERO;
        private boolean allowKeyEviction;
        private int scriptCacheSize = DEFAULT_SCRIPT_CACHE_SIZE;

        private Builder(
                RedisClusterAsyncCommands<String, String> commands,
                Duration timeout,
                boolean cluster,
                BooleanSupplier inTransaction) {
            this.commands = commands;
            this.timeout = timeout;
            this.inTransaction = inTransaction;
            this.clusterKeys = cluster;
        }

        /** Default {@link FencePolicy#STRICT}. */
        public Builder policy(FencePolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * {@code true}: refuse keys without a hash tag, as a cluster connection does, for a standalone
         * deployment that is to become a cluster. Always on for a cluster connection.
         */
        public Builder clusterKeys(boolean clusterKeys) {
            if (!clusterKeys && this.clusterKeys) {
                throw new IllegalArgumentException("a cluster connection needs hash-tagged keys; cannot turn it off");
            }
            this.clusterKeys = clusterKeys;
            return this;
        }

        /**
         * The largest value (UTF-8 bytes; for a hash, all fields and values together; for a script, all its
         * arguments together) a write may carry;
         * larger ones are refused before anything is sent. Default and upper bound {@value
         * #DEFAULT_MAX_VALUE_BYTES}, Redis's own limit. Keys have their own, {@link #maxKeyBytes}.
         *
         * <p>Whatever this is, each single argument (a value, a hash field or its value, a script argument) is also
         * held to the server's {@code proto-max-bulk-len}, which {@link #build} reads ({@code CONFIG GET}, the
         * lowest of a cluster's primaries): a longer one is refused before anything is sent, naming its size and
         * that limit. Sent, Redis would answer it with a protocol error and close the connection, failing the
         * writes pipelined behind it too. A server that does not answer {@code CONFIG GET} is taken to have Redis's
         * default, 512 MB, with a warning logged; set this (and {@link #maxKeyBytes}) to its limit then. A limit
         * lowered on the server after the build is not seen.
         */
        public Builder maxValueBytes(int maxValueBytes) {
            if (maxValueBytes < 1 || maxValueBytes > DEFAULT_MAX_VALUE_BYTES) {
                throw new IllegalArgumentException(
                        "maxValueBytes must be in 1.." + DEFAULT_MAX_VALUE_BYTES + ", got " + maxValueBytes);
            }
            this.maxValueBytes = maxValueBytes;
            return this;
        }

        /**
         * The longest key (UTF-8 bytes) a write may name, counted as its token key, the key and {@value
         * FencedRedis#TOKEN_KEY_SUFFIX}: a longer one is refused before anything is sent, naming its size (for a
         * script, each of its keys; the others have no token key). Default and upper bound {@value
         * #DEFAULT_MAX_VALUE_BYTES}, Redis's default {@code proto-max-bulk-len}. A server's lower {@code
         * proto-max-bulk-len}, read at {@link #build}, applies too (see {@link #maxValueBytes}): Redis answers a
         * longer argument with a protocol error, quoting the whole key, and closes the connection, failing the
         * writes pipelined behind it too.
         *
         * @param maxKeyBytes longer than the suffix, and at most {@value #DEFAULT_MAX_VALUE_BYTES}
         */
        public Builder maxKeyBytes(int maxKeyBytes) {
            if (maxKeyBytes <= TOKEN_KEY_SUFFIX.length() || maxKeyBytes > DEFAULT_MAX_VALUE_BYTES) {
                throw new IllegalArgumentException("maxKeyBytes must be in " + (TOKEN_KEY_SUFFIX.length() + 1) + ".."
                        + DEFAULT_MAX_VALUE_BYTES + ", got " + maxKeyBytes);
            }
            this.maxKeyBytes = maxKeyBytes;
            return this;
        }

        /**
         * After every applied write, {@code WAIT replicas timeout} on the same connection, and report in {@link
         * WriteOutcome.Applied#replicasAcknowledged()} how many replicas had the write when it returned (it
         * returns once {@code replicas} have it, or after {@code timeout}). This narrows, it does not close, the
         * window in which a failover to a replica that missed the write brings an older token back: Redis has
         * already applied and acknowledged the write to other clients, and a replica may still be promoted
         * without it. A write acknowledged by fewer replicas than asked is still applied; the caller decides.
         * Not with a cluster connection (Lettuce would send {@code WAIT} to some node, not the key's).
         *
         * @param replicas at least 1
         * @param timeout at least 1 ms and at most {@link #MAX_WAIT_TIMEOUT}, and shorter than the connection's
         *     command timeout (unless that is zero, Lettuce's no timeout); {@code WAIT} blocks the connection that
         *     long at most
         */
        public Builder waitForReplicas(int replicas, Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            if (replicas < 1) {
                throw new IllegalArgumentException("replicas to wait for must be >= 1, got " + replicas);
            }
            // Redis adds the timeout to its clock unchecked: one near 2^63 ms wraps and WAIT blocks for good
            if (timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(MAX_WAIT_TIMEOUT) > 0) {
                throw new IllegalArgumentException(
                        "WAIT timeout must be between 1 ms and " + MAX_WAIT_TIMEOUT + ", got " + timeout);
            }
            if (commands instanceof RedisAdvancedClusterAsyncCommands) {
                throw new IllegalArgumentException("waitForReplicas is not supported on a cluster connection");
            }
            if (!CommandTimeout.isNone(this.timeout) && timeout.compareTo(this.timeout) >= 0) {
                // Lettuce would time WAIT out first, report an applied write as failed, and the next writes
                // would queue behind the WAIT still running on the server
                throw new IllegalArgumentException("WAIT timeout " + timeout + " must be shorter than the"
                        + " connection's command timeout " + this.timeout);
            }
            this.waitReplicas = replicas;
            this.waitTimeout = timeout;
            return this;
        }

        /**
         * {@code true}: build even on a server whose {@code maxmemory-policy} evicts any key ({@code
         * allkeys-lru}, {@code allkeys-lfu}, {@code allkeys-random}). Such a server, once full, can evict a
         * token key, after which a stale write to its key lands. Default {@code false}: {@link #build} reads
         * the policy ({@code CONFIG GET}, on every primary of a cluster) and refuses those, naming the policy.
         * The check runs once, at build; a policy changed later is not seen.
         */
        public Builder allowKeyEviction(boolean allowKeyEviction) {
            this.allowKeyEviction = allowKeyEviction;
            return this;
        }

        /**
         * How many {@link FencedScript} bodies the writer keeps ready to send (the whole script's text and its
         * SHA-1, which {@code EVALSHA} names it by); beyond that the least recently run one is dropped, and made
         * again (its SHA-1 computed again) the next time it runs, which then runs as any other: {@code EVALSHA},
         * {@code EVAL} if Redis answers {@code NOSCRIPT}, under the same fence. Default {@value
         * #DEFAULT_SCRIPT_CACHE_SIZE}. Redis keeps its own cache of every script it has run (until {@code SCRIPT
         * FLUSH} or a restart; Redis 7.4 and later drop the least recently used of those sent as {@code EVAL}
         * beyond 500): bodies built from changing text (one per tenant, per key) fill it, so keep the text fixed
         * and pass what changes in {@code keys} and {@code args}.
         *
         * @param size at least 1
         */
        public Builder scriptCacheSize(int size) {
            if (size < 1) {
                throw new IllegalArgumentException("scriptCacheSize must be >= 1, got " + size);
            }
            this.scriptCacheSize = size;
            return this;
        }

        /**
         * Reads the server's {@code proto-max-bulk-len} (see {@link #maxValueBytes}) and, unless {@link
         * #allowKeyEviction}, its {@code maxmemory-policy}.
         *
         * @throws IllegalStateException when the server may evict token keys (see {@link #allowKeyEviction});
         *     a server that does not answer {@code CONFIG GET} is built with a warning logged
         */
        public FencedRedis build() {
            if (!allowKeyEviction) {
                EvictionCheck.requireNoKeyEviction(commands, timeout);
            }
            return new DefaultFencedRedis(
                    commands,
                    CommandTimeout.isNone(timeout) ? timeout : timeout.plus(waitTimeout),
                    policy,
                    new FencedKeys(clusterKeys, maxValueBytes, maxKeyBytes, BulkLimit.read(commands, timeout)),
                    waitReplicas,
                    waitTimeout,
                    scriptCacheSize,
                    inTransaction);
        }
    }
}
