package dev.fencing.redis;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.RedisEndpoint;
import dev.fencing.testsupport.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import io.lettuce.core.protocol.CommandType;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A client of the JVM's shared Redis, a fenced writer over it, plain commands beside it (the unfenced path
 * a test compares with), and key names of a test's own.
 */
final class RedisFixture implements AutoCloseable {
    final String uri;
    final RedisClient client;
    final StatefulRedisConnection<String, String> connection;
    /** Plain commands, writing behind the fence's back. */
    final RedisCommands<String, String> plain;

    private final String prefix;

    RedisFixture() {
        this(RedisServers.shared());
    }

    RedisFixture(RedisEndpoint redis) {
        this.uri = redis.uri();
        this.client = RedisClient.create(uri);
        this.connection = client.connect();
        this.plain = connection.sync();
        this.prefix = "it" + Long.toString(ThreadLocalRandom.current().nextLong() >>> 1, 36) + ":";
    }

    FencedRedis fenced(FencePolicy policy) {
        return FencedRedis.builder(connection).policy(policy).build();
    }

    /** A key of this fixture's own, with a hash tag: {@code {prefix name}}. */
    String key(String name) {
        return "{" + prefix + name + "}";
    }

    /** The token stored for a fenced key, as Redis holds it (0 when none). */
    long storedToken(String key) {
        String raw = plain.get(FencedRedis.tokenKey(key));
        return raw == null ? 0 : Long.parseLong(raw);
    }

    /**
     * A client of the Redis at {@code uri} whose command listener throws {@code IllegalStateException("this listener
     * refuses TYPE")} when a command of {@code refused} type starts, as a client shutting down does: that command
     * cannot be sent. The caller shuts the client down.
     */
    static RedisClient clientRefusing(String uri, CommandType refused) {
        RedisClient client = RedisClient.create(uri);
        client.addListener(new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                if (event.getCommand().getType() == refused) {
                    throw new IllegalStateException("this listener refuses " + refused);
                }
            }
        });
        return client;
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
