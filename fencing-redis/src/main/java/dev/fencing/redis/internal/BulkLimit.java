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
 * The server's {@code proto-max-bulk-len}: the longest string Redis takes as one argument. Redis answers a longer
 * one with a protocol error and closes the connection, so the writes pipelined behind it fail too; the writer
 * refuses such an argument before sending instead.
 */
public final class BulkLimit {
    private static final Logger LOG = LoggerFactory.getLogger(BulkLimit.class);
    private static final String LIMIT = "proto-max-bulk-len";
    /** Redis's default {@code proto-max-bulk-len}, assumed where the server does not tell its own. */
    public static final long DEFAULT = 512L * 1024 * 1024;

    private BulkLimit() {}

    /**
     * Reads {@code proto-max-bulk-len} (the lowest of every primary of a cluster). A server that does not answer
     * {@code CONFIG GET} (renamed or forbidden, as some managed services do, or not in time) is taken to have
     * Redis's default, with a warning.
     */
    public static long read(RedisClusterAsyncCommands<String, String> commands, Duration timeout) {
        List<CompletableFuture<Map<String, String>>> replies = ServerConfig.get(commands, LIMIT);
        long lowest = Long.MAX_VALUE;
        for (CompletableFuture<Map<String, String>> reply : replies) {
            String limit;
            try {
                limit = CommandTimeout.await(reply, timeout).get(LIMIT);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while reading Redis's " + LIMIT, e);
            } catch (TimeoutException | ExecutionException e) {
                limit = null;
                LOG.warn("could not read Redis's {} ({}): assuming {}", LIMIT, String.valueOf(e), DEFAULT);
            }
            try {
                lowest = Math.min(lowest, limit == null ? DEFAULT : Long.parseLong(limit));
            } catch (NumberFormatException e) {
                LOG.warn("Redis answered {} {}, not a number: assuming {}", LIMIT, limit, DEFAULT);
                lowest = Math.min(lowest, DEFAULT);
            }
        }
        return lowest == Long.MAX_VALUE ? DEFAULT : lowest;
    }
}
