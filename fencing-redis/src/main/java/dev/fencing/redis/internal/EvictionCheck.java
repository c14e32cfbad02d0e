package dev.fencing.redis.internal;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether Redis may evict a token key. Under a {@code maxmemory-policy} of {@code allkeys-lru}, {@code
 * allkeys-lfu} or {@code allkeys-random}, a server at its {@code maxmemory} evicts any key, token keys
 * included; the next write to that key then meets no token and a stale one lands. {@code noeviction} and the
 * {@code volatile-*} policies never evict a token key: it has no time to live (each fenced write sets it
 * without one).
 */
public final class EvictionCheck {
    private static final Logger LOG = LoggerFactory.getLogger(EvictionCheck.class);
    private static final String POLICY = "maxmemory-policy";

    private EvictionCheck() {}

    /**
     * Reads {@code maxmemory-policy} (on every primary of a cluster) and refuses a policy that evicts any key.
     * A server that refuses {@code CONFIG GET} (renamed or forbidden, as some managed services do) is let through
     * with a warning: its policy is unknown here. One that does not answer within the timeout is refused: it may
     * only be slow, and a build that waited for it would have read its policy.
     *
     * @throws IllegalStateException naming the policy and the server when it may evict token keys, or the
     *     timeout when it did not answer in time
     */
    public static void requireNoKeyEviction(RedisClusterAsyncCommands<String, String> commands, Duration timeout) {
        List<CompletableFuture<Map<String, String>>> replies = ServerConfig.get(commands, POLICY);
        for (CompletableFuture<Map<String, String>> reply : replies) {
            String policy;
            try {
                policy = CommandTimeout.await(reply, timeout).get(POLICY);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while reading Redis's " + POLICY, e);
            } catch (TimeoutException e) {
                // a server that may simply be slow: its policy is unknown, and it did refuse nothing
                throw new IllegalStateException(
                        "Redis did not answer CONFIG GET " + POLICY + " within the"
                                + " connection's command timeout " + timeout
                                + ": whether it may evict a fence token key is"
                                + " unknown; build again once it answers, or accept the risk with"
                                + " FencedRedis.Builder.allowKeyEviction(true)",
                        e);
            } catch (ExecutionException e) {
                LOG.warn(
                        "could not read Redis's {} ({}): if it is allkeys-lru, allkeys-lfu or allkeys-random, a"
                                + " full server can evict a fence token key and let a stale write land",
                        POLICY,
                        String.valueOf(e.getCause()));
                continue;
            }
            if (policy == null) {
                LOG.warn(
                        "Redis answered CONFIG GET {} without it: if it is allkeys-lru, allkeys-lfu or"
                                + " allkeys-random, a full server can evict a fence token key and let a stale write"
                                + " land",
                        POLICY);
            } else if (policy.startsWith("allkeys-")) {
                throw new IllegalStateException("Redis runs with " + POLICY + " " + policy + ": once it reaches"
                        + " maxmemory it evicts any key, a fence token key included, and the next stale write to"
                        + " that key lands. Set " + POLICY + " to noeviction or a volatile-* policy (token keys"
                        + " have no time to live, so those never evict them), or accept the risk with"
                        + " FencedRedis.Builder.allowKeyEviction(true)");
            }
        }
    }
}
