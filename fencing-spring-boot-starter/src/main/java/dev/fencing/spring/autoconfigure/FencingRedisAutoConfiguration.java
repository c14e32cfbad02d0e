package dev.fencing.spring.autoconfigure;

import dev.fencing.redis.FencedRedis;
import dev.fencing.spring.FencedRedisCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.internal.FencedRedisConnection;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A {@link FencedRedis} on the application's single {@link RedisConnectionFactory} (Spring Boot's, from
 * {@code spring.data.redis.*}, or the application's own), unless the application has a {@link FencedRedis}
 * bean. Present when {@code fencing-redis} and Spring Data Redis are on the class path; off with {@code
 * fencing.redis.enabled=false}.
 *
 * <p>The writer gets a Lettuce connection of its own, {@code fencingRedisConnection}: a {@code String}
 * connection opened from the factory's native client ({@code RedisClient} for a standalone server or the
 * master its Sentinels name, {@code RedisClusterClient} for a cluster), so it reaches the same server with
 * the same database, credentials, TLS and command timeout, and shares the factory's event loops. It is
 * opened when the context starts (an unreachable Redis fails the start; Lettuce reconnects by itself after
 * that) and closed when the context closes, before the factory. The factory's own connections are left to
 * the application: they use a {@code byte[]} codec and may be pooled, or shared with transactions and
 * pipelines, where a fenced script does not belong.
 *
 * <p>{@code fencing.redis.policy} (default {@code strict}), {@code cluster-keys}, {@code max-key-bytes}, and
 * {@code wait-for-replicas} with {@code wait-timeout} set the builder, then each {@link FencedRedisCustomizer} bean
 * adjusts it. A bad value fails the start with a message naming the property; so does a factory that is not
 * a {@link LettuceConnectionFactory} (fencing-redis is built on Lettuce), and a static master/replica factory,
 * which has no address of its own to connect to: define the {@link FencedRedis} bean yourself then.
 *
 * <p>When the application has its own {@link FencedRedis} bean, nothing here is made and no connection is
 * opened.
 */
@AutoConfiguration(afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass({FencedRedis.class, LettuceConnectionFactory.class})
@ConditionalOnSwitch("fencing.redis.enabled")
// on the class, so that an application's own FencedRedis also keeps the connection from being opened
@ConditionalOnMissingBean(FencedRedis.class)
@ConditionalOnSingleCandidate(RedisConnectionFactory.class)
@EnableConfigurationProperties(FencingProperties.class)
public class FencingRedisAutoConfiguration {

    @Bean(destroyMethod = "close")
    public FencedRedisConnection fencingRedisConnection(RedisConnectionFactory factory, FencingProperties properties) {
        // the properties are checked before anything is connected
        checkWaitForReplicas(properties.getRedis());
        checkMaxKeyBytes(properties.getRedis().getMaxKeyBytes());
        if (!(factory instanceof LettuceConnectionFactory lettuce)) {
            throw new IllegalStateException("fencing-redis is on the class path but the RedisConnectionFactory is a "
                    + factory.getClass().getName() + ", not a LettuceConnectionFactory: FencedRedis is built on"
                    + " Lettuce. Use Lettuce, define a FencedRedis bean yourself, or set fencing.redis.enabled=false");
        }
        return FencedRedisConnection.open(lettuce);
    }

    @Bean
    public FencedRedis fencedRedis(
            FencedRedisConnection connection,
            FencingProperties properties,
            ObjectProvider<FencedRedisCustomizer> customizers) {
        FencingProperties.Redis settings = properties.getRedis();
        FencedRedis.Builder builder = connection
                .builder()
                .policy(settings.getPolicy())
                .allowKeyEviction(settings.isAllowKeyEviction())
                .maxKeyBytes(settings.getMaxKeyBytes());
        if (settings.isClusterKeys()) {
            builder.clusterKeys(true);
        }
        if (settings.getWaitForReplicas() > 0) {
            if (connection.isCluster()) {
                throw new IllegalStateException("fencing.redis.wait-for-replicas=" + settings.getWaitForReplicas()
                        + " is not supported on Redis Cluster (WAIT would go to some node, not the key's)");
            }
            try {
                builder.waitForReplicas(settings.getWaitForReplicas(), settings.getWaitTimeout());
            } catch (IllegalArgumentException e) { // a timeout the connection cannot take: name the property
                throw new IllegalStateException(
                        "fencing.redis.wait-timeout=" + settings.getWaitTimeout() + " cannot be used: " + e.getMessage()
                                + " (spring.data.redis.timeout sets the command timeout)",
                        e);
            }
        }
        customizers.orderedStream().forEach(c -> c.customize(builder));
        return builder.build();
    }

    private static void checkMaxKeyBytes(int maxKeyBytes) {
        // the builder's own bounds: a token key is longer than its suffix, and Redis takes no string over 512 MB
        int least = FencedRedis.TOKEN_KEY_SUFFIX.length() + 1;
        if (maxKeyBytes < least || maxKeyBytes > FencedRedis.Builder.DEFAULT_MAX_VALUE_BYTES) {
            throw new IllegalStateException("fencing.redis.max-key-bytes must be in " + least + ".."
                    + FencedRedis.Builder.DEFAULT_MAX_VALUE_BYTES + ", got " + maxKeyBytes
                    + " (it counts a token key, the key and " + FencedRedis.TOKEN_KEY_SUFFIX
                    + ", and is at most the server's proto-max-bulk-len)");
        }
    }

    private static void checkWaitForReplicas(FencingProperties.Redis settings) {
        int replicas = settings.getWaitForReplicas();
        Duration timeout = settings.getWaitTimeout();
        if (replicas < 0) {
            throw new IllegalStateException(
                    "fencing.redis.wait-for-replicas must be >= 0 (0: no WAIT), got " + replicas);
        }
        if (replicas > 0 && timeout == null) {
            throw new IllegalStateException("fencing.redis.wait-timeout is missing: fencing.redis.wait-for-replicas="
                    + replicas + " needs it (WAIT blocks the connection that long at most)");
        }
        if (replicas == 0 && timeout != null) {
            throw new IllegalStateException("fencing.redis.wait-timeout is set but fencing.redis.wait-for-replicas is"
                    + " 0, so no WAIT would be sent: set both, or neither");
        }
        if (timeout != null && timeout.compareTo(Duration.ofMillis(1)) < 0) {
            throw new IllegalStateException("fencing.redis.wait-timeout must be at least 1ms, got " + timeout);
        }
        if (timeout != null && timeout.compareTo(FencedRedis.Builder.MAX_WAIT_TIMEOUT) > 0) {
            throw new IllegalStateException("fencing.redis.wait-timeout must be at most "
                    + FencedRedis.Builder.MAX_WAIT_TIMEOUT + ", got " + timeout);
        }
    }
}
