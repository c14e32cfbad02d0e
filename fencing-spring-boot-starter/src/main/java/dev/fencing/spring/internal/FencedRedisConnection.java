package dev.fencing.spring.internal;

import dev.fencing.redis.FencedRedis;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Lettuce connection the starter's {@link FencedRedis} writes over: a {@code String} connection of its
 * own, opened from the client of the application's {@link LettuceConnectionFactory} (so with its address,
 * database, credentials, TLS, timeout and client resources), and closed with the application context.
 * Thread-safe, as the Lettuce connection; {@link #close()} is safe twice.
 */
public final class FencedRedisConnection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencedRedisConnection.class);

    private final StatefulRedisConnection<String, String> standalone;
    private final StatefulRedisClusterConnection<String, String> cluster;

    private FencedRedisConnection(
            StatefulRedisConnection<String, String> standalone,
            StatefulRedisClusterConnection<String, String> cluster) {
        this.standalone = standalone;
        this.cluster = cluster;
    }

    /**
     * Opens the connection now, from the factory's {@link RedisClient} (standalone, or the master its
     * Sentinels name) or {@link RedisClusterClient}.
     *
     * @throws IllegalStateException if the factory is not started, has no address of its own (a static
     *     master/replica configuration) or Redis cannot be reached; the message says what to do
     */
    public static FencedRedisConnection open(LettuceConnectionFactory factory) {
        AbstractRedisClient client = factory.getNativeClient();
        if (client == null) {
            throw new IllegalStateException("the LettuceConnectionFactory is not started (early startup off?), so"
                    + " fencing.redis cannot open the FencedRedis connection from its client: start it early, or"
                    + " define a FencedRedis bean yourself");
        }
        // The factory's own connections use a byte[] codec and may be pooled or shared with the application's
        // transactions and pipelines; the fence's scripts get a connection of their own, with Strings, which
        // Lettuce keeps reconnecting like any other.
        try {
            FencedRedisConnection opened = client instanceof RedisClusterClient clusterClient
                    ? new FencedRedisConnection(null, clusterClient.connect(StringCodec.UTF8))
                    : new FencedRedisConnection(((RedisClient) client).connect(StringCodec.UTF8), null);
            LOG.info(
                    "opened the FencedRedis connection ({}) from the application's LettuceConnectionFactory",
                    opened.isCluster() ? "Redis Cluster" : "standalone or Sentinel");
            return opened;
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "fencing.redis cannot open the FencedRedis connection from the LettuceConnectionFactory's "
                            + client.getClass().getSimpleName() + " (" + e.getMessage() + "). A static"
                            + " master/replica configuration has no address of its own: define a FencedRedis bean"
                            + " on a connection to the primary, or set fencing.redis.enabled=false",
                    e);
        }
    }

    /** A {@link FencedRedis} builder on this connection (a cluster one for a cluster connection). */
    public FencedRedis.Builder builder() {
        return cluster != null ? FencedRedis.builder(cluster) : FencedRedis.builder(standalone);
    }

    public boolean isCluster() {
        return cluster != null;
    }

    /** The Lettuce connection itself. */
    public StatefulConnection<String, String> connection() {
        return cluster != null ? cluster : standalone;
    }

    public boolean isOpen() {
        return connection().isOpen();
    }

    @Override
    public void close() {
        StatefulConnection<String, String> connection = connection();
        if (connection.isOpen()) {
            connection.close();
            LOG.info("closed the FencedRedis connection");
        }
    }
}
