package dev.fencing.redis.internal;

import io.lettuce.core.cluster.api.async.AsyncExecutions;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Reads a server setting where the writer's checks need it: on the server, or on every primary of a cluster. */
final class ServerConfig {
    private ServerConfig() {}

    /** Sends {@code CONFIG GET name} to the server, or to every primary of a cluster; one reply each. */
    static List<CompletableFuture<Map<String, String>>> get(
            RedisClusterAsyncCommands<String, String> commands, String name) {
        List<CompletableFuture<Map<String, String>>> replies = new ArrayList<>();
        if (commands instanceof RedisAdvancedClusterAsyncCommands<String, String> cluster) {
            AsyncExecutions<Map<String, String>> executions =
                    cluster.upstream().commands().configGet(name);
            for (CompletableFuture<Map<String, String>> reply : executions.futures()) {
                replies.add(reply);
            }
        } else {
            replies.add(commands.configGet(name).toCompletableFuture());
        }
        return replies;
    }
}
