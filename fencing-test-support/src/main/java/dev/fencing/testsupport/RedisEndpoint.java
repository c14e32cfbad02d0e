package dev.fencing.testsupport;

/**
 * A Redis server a test can connect to. Closing it stops what the tests started; an external server is
 * left alone.
 *
 * <pre>{@code
 * try (RedisEndpoint redis = RedisServers.start()) {
 *     RedisClient client = RedisClient.create(redis.uri());
 *     ...
 * }
 * }</pre>
 */
public interface RedisEndpoint extends AutoCloseable {

    /** A Redis URI, {@code redis://host:port[/database]}, as Lettuce's {@code RedisURI.create} reads it. */
    String uri();

    /** Stops the server if the tests started it; an external server is left alone. */
    @Override
    void close();
}
